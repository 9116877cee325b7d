//! The `antiopa` binary: parse arguments, run, map the result to an exit code.

fn main() {
    antiopa::cli::main()
}
