//! Writes the exported library's header (`accdemo.h`) and manifest
//! (`accdemo.json`) into the folder given as the argument.

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: accdemo-header DIR");
        std::process::exit(2)
    };
    let m = accdemo::manifest();
    let dir = std::path::Path::new(&dir);
    for (file, text) in [("accdemo.h", m.header()), ("accdemo.json", m.json())] {
        if let Err(e) = std::fs::write(dir.join(file), text) {
            eprintln!("accdemo-header: writing {file}: {e}");
            std::process::exit(1)
        }
    }
}
