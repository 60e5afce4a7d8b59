//! The one way to take a `std::sync::Mutex`: [`lock`], which recovers the
//! data from a poisoned lock instead of panicking.
//!
//! A mutex is poisoned when a thread panicked while holding it. Everything
//! semclip keeps behind one (caches, counters, queues, a cookie jar, host
//! slots) stays usable after such a panic: each holder leaves it whole
//! between statements, and the worst a half-done update leaves is a stale
//! entry the next check or request replaces. The daemon must not turn one
//! panic into a panic in every task that touches the same data, so the
//! lock is taken anyway. `clippy.toml` forbids plain `Mutex::lock`, so every
//! lock goes through here.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking its data back if a panicking holder poisoned it
/// (see the module docs for why that is right here).
#[expect(
    clippy::disallowed_methods,
    reason = "the one place that calls Mutex::lock, recovering from poison"
)]
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_gives_its_data_back() {
        let mutex = std::sync::Arc::new(Mutex::new(1));
        let held = std::sync::Arc::clone(&mutex);
        let panicked = std::thread::spawn(move || {
            let mut guard = lock(&held);
            *guard = 2;
            panic!("a holder panics");
        })
        .join();
        assert!(panicked.is_err());
        assert!(mutex.is_poisoned());
        assert_eq!(*lock(&mutex), 2);
    }
}
