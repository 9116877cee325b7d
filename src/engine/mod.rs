//! Go's `text/template`, ported: lexer, parser, AST with positions, and a
//! tree-walking evaluator, plus the function table (Go builtins and Sprig).
//!
//! The engine does no I/O and knows nothing of charts or Kubernetes: it
//! parses named texts into one template namespace and executes them over
//! [`Value`]s. Helm's rules that live at the template level (`include`,
//! `tpl`, `define` override order, `<no value>`) are options of the engine;
//! everything else Helm adds is registered by `chart` as functions.

mod ast;
mod error;
mod exec;
pub mod funcs;
pub mod gofmt;
mod lexer;
mod parse;
pub mod value;

#[cfg(test)]
mod tests;

pub use error::{Error, ErrorData, ErrorKind};
pub use exec::Templates;
pub use funcs::{Env, FuncDef, FuncImpl, FuncMap, FuncResult, Param};
pub use value::{Entries, Key, List, ListKind, Map, MapKind, Member, Method, Object, Value};
