//! Command-line interface: clap types and output formatting only.

/// Run the command line; returns the process exit code.
pub fn main() -> i32 {
    0
}
