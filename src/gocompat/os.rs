//! Go's `os` error texts: `*fs.PathError` as Helm prints it when a file
//! cannot be opened or read (`open c/x.json: no such file or directory`).

use std::path::Path;

/// Go's `*fs.PathError` text, `op path: reason`, with the reason as Go's
/// errno table words it (glibc's text, lower-cased; Rust appends
/// `(os error N)`, Go does not).
pub fn path_error(op: &str, path: &Path, e: &std::io::Error) -> String {
    let text = e.to_string();
    let reason = match e.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .unwrap_or(&text),
        None => &text,
    };
    let mut chars = reason.chars();
    let reason: String = match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    };
    format!("{op} {}: {reason}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_texts_as_go_prints_them() {
        let e = std::io::Error::from_raw_os_error(2);
        assert_eq!(
            path_error("open", Path::new("./x.json"), &e),
            "open ./x.json: no such file or directory"
        );
        let e = std::io::Error::from_raw_os_error(21);
        assert_eq!(
            path_error("read", Path::new("c"), &e),
            "read c: is a directory"
        );
    }
}
