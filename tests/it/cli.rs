//! The binary: exit codes and output of `hierarchy` and `xpath`.
