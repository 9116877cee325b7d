//! Template errors. `Display` is Go's exact text (`template: NAME:LINE: MSG`
//! for parse errors, `template: FILE:LINE:COL: executing "TMPL" at <NODE>:
//! MSG` for execution errors); the parts are kept as fields so the chart
//! layer can reformat them the way Helm does.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A syntax error (Go's parse errors).
    Parse,
    /// An error while executing a template (Go's `ExecError`).
    Exec,
    /// Anything else, e.g. executing a template that does not exist.
    Other,
}

/// A template error; its parts are in [`ErrorData`] (reached through
/// `Deref`), boxed so that `Result<_, Error>` stays small.
#[derive(Clone, Debug)]
pub struct Error(pub Box<ErrorData>);

impl std::ops::Deref for Error {
    type Target = ErrorData;
    fn deref(&self) -> &ErrorData {
        &self.0
    }
}

#[derive(Clone, Debug)]
pub struct ErrorData {
    pub kind: ErrorKind,
    /// The full message, exactly as Go prints it.
    pub message: String,
    /// File (Go's ParseName) where the failing node was parsed.
    pub file: Option<String>,
    pub line: Option<usize>,
    /// 0-based byte column (exec errors only).
    pub col: Option<usize>,
    /// The template being executed (exec errors only).
    pub template: Option<String>,
    /// Go's `Node.String()` of the failing node (exec errors only).
    pub node: Option<String>,
    /// The message without the location prefix.
    pub msg: String,
    /// The innermost function whose error ended execution (through nested
    /// `include`/`tpl` calls), and that function's own message.
    pub func_name: Option<String>,
    pub func_msg: Option<String>,
}

impl Error {
    pub fn new(data: ErrorData) -> Error {
        Error(Box::new(data))
    }

    pub fn parse(name: &str, line: usize, msg: String) -> Error {
        Error::new(ErrorData {
            kind: ErrorKind::Parse,
            message: format!("template: {name}:{line}: {msg}"),
            file: Some(name.to_string()),
            line: Some(line),
            col: None,
            template: None,
            node: None,
            msg,
            func_name: None,
            func_msg: None,
        })
    }

    pub fn other(msg: String) -> Error {
        Error::new(ErrorData {
            kind: ErrorKind::Other,
            message: msg.clone(),
            file: None,
            line: None,
            col: None,
            template: None,
            node: None,
            msg,
            func_name: None,
            func_msg: None,
        })
    }

    pub fn is_parse(&self) -> bool {
        self.kind == ErrorKind::Parse
    }
    pub fn is_exec(&self) -> bool {
        self.kind == ErrorKind::Exec
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}
