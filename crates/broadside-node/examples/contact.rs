//! The contact experiment (Broadside against kernel TCP through the lossy
//! packet relay, one 20-second contact, both ways at once): see
//! `broadside_node::contact`. Needs Linux, root, `ip` and /dev/net/tun; where
//! they are missing it says why and exits 0.
//!
//! Usage: `cargo run --release -p broadside-node --example contact [LOSSES] [CSV_OUT]`
//! LOSSES is comma-separated (default `0,0.1,0.3`). Prints the table; writes
//! the CSV to CSV_OUT if given. Env: CONTACT_SECS (default 20), CONTACT_FILES
//! per side (8), CONTACT_MB per file (10), CONTACT_BW bytes/s (2500000).

fn env_num(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[cfg(target_os = "linux")]
fn main() {
    use broadside_node::contact::{self, ContactOptions, Row};
    use std::time::Duration;
    if let Some(why) = broadside_node::netlab::Lab::available() {
        println!("contact experiment skipped: {why}");
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    let losses: Vec<f64> = args
        .get(1)
        .map_or("0,0.1,0.3", String::as_str)
        .split(',')
        .map(|x| x.trim().parse().expect("LOSSES: comma-separated numbers"))
        .collect();
    let work = std::env::temp_dir().join(format!("broadside-contact-{}", std::process::id()));
    let mut o = ContactOptions::paper(work.clone());
    o.contact = Duration::from_secs_f64(env_num("CONTACT_SECS", 20.0));
    o.files_per_side = env_num("CONTACT_FILES", 8.0) as usize;
    o.file_size = (env_num("CONTACT_MB", 10.0) * 1e6) as usize;
    o.bandwidth = env_num("CONTACT_BW", 2.5e6) as u64;
    eprintln!(
        "contact: {:.0} s at {} B/s per direction, {} ms delay, MTU {}, {} files of {} B newer on each side",
        o.contact.as_secs_f64(),
        o.bandwidth,
        o.delay.as_millis(),
        o.mtu,
        o.files_per_side,
        o.file_size
    );
    let rows = contact::run(&o, &losses);
    let _ = std::fs::remove_dir_all(&work);
    let rows = match rows {
        Ok(r) => r,
        Err(e) => {
            eprintln!("contact experiment failed: {e}");
            std::process::exit(1);
        }
    };
    print!("{}", contact::table(&rows, o.contact));
    if let Some(out) = args.get(2) {
        let mut csv = format!("{}\n", Row::CSV_HEADER);
        for r in &rows {
            csv += &format!("{}\n", r.csv(o.contact));
        }
        std::fs::write(out, csv).expect("write CSV");
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("contact experiment skipped: needs Linux (network namespaces, TUN)");
}
