//! (in progress)

use crate::engine::funcs::FuncMap;

pub fn register(_m: &mut FuncMap) {}
