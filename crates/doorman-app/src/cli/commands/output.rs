//! The command line's results, on stdout (logs go to stderr).

#![allow(clippy::print_stdout)]

pub fn line(text: &str) {
    println!("{text}");
}

pub fn json(value: &serde_json::Value) {
    println!("{value}");
}

/// Text printed as it is (it ends with its own newline).
pub fn text(text: &str) {
    print!("{text}");
}
