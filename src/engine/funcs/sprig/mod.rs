//! Sprig v3.3.0's function library.

pub mod crypto;
pub mod dates;
pub mod random;

use super::FuncMap;

pub fn register(m: &mut FuncMap) {
    crypto::register(m);
    dates::register(m);
    random::register(m);
}
