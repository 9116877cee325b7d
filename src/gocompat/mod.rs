//! What Go's standard library does that several layers need exactly, in
//! one leaf module: the engine (Go's `fmt`, templates' errors) and the YAML
//! and TOML code (Helm's error texts) print strings the way `strconv` does.
//! It uses nothing of the crate.

pub mod float;
pub mod json;
pub mod os;
pub mod strconv;
pub mod time;
