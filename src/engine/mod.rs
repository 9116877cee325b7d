//! Go's `text/template`, ported: lexer, parser, AST with positions, and a
//! tree-walking evaluator, plus the function table (Go builtins and Sprig).
//!
//! The engine does no I/O and knows nothing of charts or Kubernetes: it
//! parses named texts into one template namespace and executes them over
//! [`Value`]s. Helm's rules that live at the template level (`include`,
//! `tpl`, `define` override order, `<no value>`) are options of the engine;
//! everything else Helm adds is registered by `chart` as functions.
//!
//! Use: [`Templates::new`] with the function table, [`Templates::parse`]
//! each file in Helm's order, then [`Templates::execute`] each file with
//! its context. Output is Go's, `<no value>` included (Helm strips it per
//! file; `tpl` strips it itself). [`Error`] prints Go's exact message and
//! keeps its parts (file, line, column, node, innermost function and
//! message) for Helm's `parse error at (…)` / `execution error at (…)`
//! rewrites. The semantics are those of the Go that helm v3.17.3 is built
//! with (1.23): no `range` over integers.

mod ast;
mod error;
mod exec;
pub mod funcs;
pub mod gofmt;
mod lexer;
pub mod limits;
mod parse;
pub mod threads;
pub mod value;

#[cfg(test)]
mod limits_tests;
#[cfg(test)]
mod tests;

pub use error::{Error, ErrorData, ErrorKind};
pub use exec::{LateFiles, ParsedFile, Templates};
pub use funcs::{Env, FuncDef, FuncImpl, FuncMap, FuncResult, Param};
pub use limits::{LimitHit, Limits};
pub use value::{Entries, Key, List, ListKind, Map, MapKind, Member, Method, Object, Value};
