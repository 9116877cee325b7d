//! The `antiopa` binary: parse arguments, run, map the result to an exit code.

fn main() {
    std::process::exit(antiopa::cli::main());
}
