//! Go text/template's builtin functions (`and`, `or`, `not`, `len`, `index`,
//! `slice`, `print*`, `html`, `js`, `urlquery`, `call`, comparisons).

use super::FuncMap;

pub fn register(_m: &mut FuncMap) {}
