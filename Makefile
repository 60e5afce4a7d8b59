# The README's two commands. Each installs the Debian packages it needs when
# they are missing (scripts/packages.sh), then builds and runs. People who
# manage their own packages can use the plain cargo commands in the README.

.PHONY: run test

# The daemon on the bundled watches (semclip.yaml): demo site, SQLite store,
# clip server on http://127.0.0.1:8080/status. Ctrl-C stops it.
run:
	scripts/packages.sh build
	cargo run --release -- run

# The tests, exactly as CI runs them (.ci/run adds the lints first).
test:
	scripts/packages.sh test
	cargo test --locked
