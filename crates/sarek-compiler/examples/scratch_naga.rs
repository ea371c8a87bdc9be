fn main() {
    for path in std::env::args().skip(1) {
        let src = std::fs::read_to_string(&path).unwrap();
        let r = naga::front::wgsl::parse_str(&src).map_err(|e| e.emit_to_string(&src)).and_then(|m| {
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
                .validate(&m).map(|_| ()).map_err(|e| e.emit_to_string(&src))
        });
        match r { Ok(()) => println!("{path}: ok"), Err(e) => println!("{path}: {}", &e[..e.len().min(600)]) }
    }
}
