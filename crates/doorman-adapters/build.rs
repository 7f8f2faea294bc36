//! `embed_migrations!` reads `migrations/` at compile time, but cargo only knows to rebuild
//! when this crate's own sources change: without this, a new or edited migration would not
//! reach the binary (nor the test databases built from it) until something else changed.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
