//! Front-end benchmark (parse + type check per corpus kernel). (Stub.)
fn main() {}
