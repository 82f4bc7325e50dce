//! The `broadside-node` binary: a thin wrapper over [`broadside_node::run_cli`].

fn main() {
    // Lossy conversion: a non-UTF-8 argument becomes a clear usage error, not a panic.
    let args = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    std::process::exit(broadside_node::run_cli(args));
}
