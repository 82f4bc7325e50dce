//! The ONE simulator's external movement format, read and written, so that
//! a trace run here can be run in The ONE (its `ExternalMovement` model).
//!
//! The format (The ONE, `input/ExternalMovementReader.java`): a first line
//! `minTime maxTime minX maxX minY maxY [minZ maxZ]`, then one line
//! `time id x y` per sample, sorted by time, with one sampling interval for
//! the whole file; lines starting with `#` are comments (except the first
//! two lines, which The ONE reads unchecked).
//!
//! The ONE knows only the ids present at the first time instance and keeps
//! a node where it was last placed (`movement/ExternalMovement.java`: "skip
//! unknown IDs"). A trace whose vehicles appear and disappear therefore
//! needs a parking lot: with `park`, every vehicle absent at the first step
//! starts in a lot east of the area (spots [`PARKING_SPACING`] apart, the
//! lot [`PARKING_GAP`] beyond the easternmost sample), goes back to its spot
//! the step after it leaves the trace, and a comment line after the first
//! sample tells this reader where the lot starts, so that reading the file
//! back gives the trace that was written.
//!
//! A parked vehicle is also written at its spot the step before it enters
//! the trace. The ONE moves a node along a path that starts at the last
//! time the node was seen standing still (`ExternalMovement.addLocation`),
//! at the speed that covers each sample's distance in one interval: a
//! vehicle last seen in the lot at 0 s and next at its entry at 200 s
//! would leave the lot at 0 s and run ahead of its samples (by as many
//! intervals as The ONE has preloaded). Seen standing in the lot at 199 s,
//! it leaves at 199 s and is at its first sample at 200 s.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::Path;

use crate::input;
use crate::trace::{Trace, TraceBuilder, TraceError};

/// Distance between parking spots, m: above the 150 m contact range of
/// Zahn et al. (2009) §5.6, so parked vehicles never meet.
pub const PARKING_SPACING: f64 = 200.0;
/// Distance from the easternmost sample to the lot, m.
pub const PARKING_GAP: f64 = 1000.0;
const PARKING_MARK: &str = "# wayside: parking lot for absent vehicles at x >=";

/// Writes `trace` in The ONE's format; with `park`, adds the parking lot
/// The ONE needs for vehicles that appear and disappear (see the module doc).
pub fn write(trace: &Trace, mut w: impl Write, park: bool) -> Result<(), TraceError> {
    let io = |e: std::io::Error| TraceError(format!("writing The ONE trace: {e}"));
    let Some(b) = trace.bounds() else {
        return Err(TraceError(
            "the trace has no samples: The ONE's format needs at least one".into(),
        ));
    };
    if let Some(n) = trace
        .names()
        .iter()
        .find(|n| n.is_empty() || n.chars().any(char::is_whitespace))
    {
        return Err(TraceError(format!(
            "vehicle id '{n}': The ONE's ids are single words (no spaces)"
        )));
    }
    let n = trace.vehicles();
    let cols = (n as f64).sqrt().ceil().max(1.0) as usize;
    let lot_x = (b.max_x + PARKING_GAP).ceil();
    let spot = |v: usize| {
        (
            lot_x + PARKING_SPACING * (v % cols) as f64,
            b.min_y + PARKING_SPACING * (v / cols) as f64,
        )
    };
    let (max_x, max_y) = if park {
        (spot(cols - 1).0.max(b.max_x), spot(n - 1).1.max(b.max_y))
    } else {
        (b.max_x, b.max_y)
    };
    let times = trace.times();
    writeln!(
        w,
        "{} {} {} {} {} {}",
        times[0],
        times[times.len() - 1],
        b.min_x as f32,
        max_x as f32,
        b.min_y as f32,
        max_y as f32
    )
    .map_err(io)?;
    let mut present = vec![false; n];
    let mut first_line = true;
    let steps: Vec<_> = trace.iter().collect();
    let mut next = vec![false; if park { n } else { 0 }];
    for (i, s) in steps.iter().enumerate() {
        let mut now = vec![false; if park { n } else { 0 }];
        for k in 0..s.vehicle.len() {
            let v = s.vehicle[k] as usize;
            writeln!(w, "{} {} {} {}", s.time, trace.names()[v], s.x[k], s.y[k]).map_err(io)?;
            if first_line {
                if park {
                    writeln!(w, "{PARKING_MARK} {lot_x}").map_err(io)?;
                }
                first_line = false;
            }
            if park {
                now[v] = true;
            }
        }
        if park {
            next.iter_mut().for_each(|p| *p = false);
            if let Some(after) = steps.get(i + 1) {
                after.vehicle.iter().for_each(|&v| next[v as usize] = true);
            }
            for v in 0..n {
                // In the lot at the first step (absent ones), the step after
                // leaving and the step before entering.
                if !now[v] && (i == 0 || present[v] || next[v]) {
                    let (x, y) = spot(v);
                    writeln!(
                        w,
                        "{} {} {} {}",
                        s.time,
                        trace.names()[v],
                        x as f32,
                        y as f32
                    )
                    .map_err(io)?;
                }
            }
            present = now;
        }
    }
    w.flush().map_err(io)
}

/// Writes a trace file (see [`write`]).
pub fn write_file(trace: &Trace, path: &Path, park: bool) -> Result<(), TraceError> {
    let f = std::fs::File::create(path)
        .map_err(|e| TraceError(format!("{}: cannot be written ({e})", path.display())))?;
    write(trace, std::io::BufWriter::new(f), park)
}

/// Reads a trace file in The ONE's format (plain or gzip); see [`read`].
pub fn read_file(path: &Path, builder: TraceBuilder) -> Result<Trace, TraceError> {
    read(input::open(path)?, &path.display().to_string(), builder)
}

/// Reads a trace file as The ONE's `ExternalMovement` sees it: the hosts
/// are the ids of the first time instance, in file order (vehicle `i` is
/// The ONE's host `i`); a host stays where it was last placed, parking
/// lot included, so every host is present at every step; later ids are
/// skipped, as The ONE skips them.
pub fn read_file_as_the_one(path: &Path) -> Result<Trace, TraceError> {
    let name = path.display().to_string();
    let mut lines = input::open(path)?.lines().enumerate();
    let mut b = TraceBuilder::new();
    let mut index: HashMap<String, u32> = HashMap::new();
    let mut pos: Vec<(f64, f64)> = Vec::new();
    let mut listed: Vec<bool> = Vec::new();
    let mut now: Option<f64> = None;
    let mut first = true;
    let flush = |b: &mut TraceBuilder, t: f64, pos: &[(f64, f64)], listed: &mut [bool]| {
        for (v, &(x, y)) in pos.iter().enumerate() {
            if !std::mem::take(&mut listed[v]) {
                b.push_index(t, v as u32, x, y, &|| name.clone())?;
            }
        }
        Ok::<(), TraceError>(())
    };
    header(lines.next().map(|(_, l)| l), &name)?;
    for (i, line) in lines {
        let no = i + 1;
        let Some((t, id, x, y)) = sample(line, &name, no)? else {
            continue;
        };
        if now != Some(t) {
            if let Some(t0) = now {
                flush(&mut b, t0, &pos, &mut listed)?;
                first = false;
            }
            now = Some(t);
        }
        let v = match index.get(&id) {
            Some(&v) => v,
            None if first => {
                let v = b.intern(&id);
                index.insert(id, v);
                pos.push((x, y));
                listed.push(false);
                v
            }
            None => continue,
        };
        pos[v as usize] = (x, y);
        listed[v as usize] = true;
        b.push_index(t, v, x, y, &|| format!("{name}, line {no}"))?;
    }
    if let Some(t0) = now {
        flush(&mut b, t0, &pos, &mut listed)?;
    }
    Ok(b.finish())
}

fn header(line: Option<std::io::Result<String>>, name: &str) -> Result<(), TraceError> {
    let header = match line {
        Some(l) => l.map_err(|e| TraceError(format!("{name}: cannot be read ({e})")))?,
        None => {
            return Err(TraceError(format!(
                "{name}: empty; The ONE's format starts with 'minTime maxTime minX maxX minY maxY'"
            )))
        }
    };
    let h: Vec<&str> = header.split_whitespace().collect();
    if !(h.len() == 6 || h.len() == 8) || h.iter().any(|v| v.parse::<f64>().is_err()) {
        return Err(TraceError(format!(
            "{name}, line 1: '{header}' is not a header: write 'minTime maxTime minX maxX minY maxY' (6 or 8 numbers)"
        )));
    }
    Ok(())
}

/// One data line: `time id x y`, or `None` for a blank or comment line.
fn sample(
    line: std::io::Result<String>,
    name: &str,
    no: usize,
) -> Result<Option<(f64, String, f64, f64)>, TraceError> {
    let line = line.map_err(|e| TraceError(format!("{name}, line {no}: cannot be read ({e})")))?;
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let f: Vec<&str> = line.split_whitespace().collect();
    let nums = (f.len() == 4).then(|| {
        (
            f[0].parse::<f64>(),
            f[2].parse::<f64>(),
            f[3].parse::<f64>(),
        )
    });
    let Some((Ok(t), Ok(x), Ok(y))) = nums else {
        return Err(TraceError(format!(
            "{name}, line {no}: '{line}' is not 'time id x y'"
        )));
    };
    Ok(Some((t, f[1].to_string(), x, y)))
}

/// Reads The ONE's format from `src`; samples in a parking lot marked by
/// [`write`] count as absences. `name` labels error messages.
pub fn read(src: impl BufRead, name: &str, mut builder: TraceBuilder) -> Result<Trace, TraceError> {
    let mut lot_x = f64::INFINITY;
    let mut lines = src.lines().enumerate();
    header(lines.next().map(|(_, l)| l), name)?;
    for (i, line) in lines {
        let no = i + 1;
        let line =
            line.map_err(|e| TraceError(format!("{name}, line {no}: cannot be read ({e})")))?;
        if let Some(rest) = line.trim().strip_prefix(PARKING_MARK) {
            lot_x = rest.trim().parse().map_err(|_| {
                TraceError(format!(
                    "{name}, line {no}: bad parking mark '{}'",
                    line.trim()
                ))
            })?;
            continue;
        }
        let Some((t, id, x, y)) = sample(Ok(line), name, no)? else {
            continue;
        };
        if x >= lot_x {
            builder.empty_step(t);
        } else {
            builder.push(t, &id, x, y, &|| format!("{name}, line {no}"))?;
        }
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Trace {
        let at = || String::new();
        let mut b = TraceBuilder::new();
        // "a" throughout; "b" appears at 1 s and leaves after 2 s; "c" only at 3 s.
        for t in 0..4 {
            let t = t as f64;
            b.push(t, "a", 100.0 + 13.9 * t, 50.25, &at).unwrap();
            if (1.0..=2.0).contains(&t) {
                b.push(t, "b", 300.125, -7.5 + t, &at).unwrap();
            }
            if t == 3.0 {
                b.push(t, "c", 0.1, 0.2, &at).unwrap();
            }
        }
        b.finish()
    }

    fn same(a: &Trace, b: &Trace) {
        assert_eq!(a.names(), b.names());
        assert_eq!(a.times(), b.times());
        for i in 0..a.steps() {
            let (s, r) = (a.step(i), b.step(i));
            assert_eq!((s.vehicle, s.x, s.y), (r.vehicle, r.x, r.y), "step {i}");
        }
    }

    #[test]
    fn round_trips_with_and_without_parking() {
        let t = sample();
        for park in [false, true] {
            let mut out = Vec::new();
            write(&t, &mut out, park).unwrap();
            let back = read(&out[..], "mem", TraceBuilder::new()).unwrap();
            same(&t, &back);
        }
    }

    #[test]
    fn read_as_the_one_the_lot_is_a_place_and_hosts_keep_the_first_steps_order() {
        let mut out = Vec::new();
        write(&sample(), &mut out, true).unwrap();
        let path = std::env::temp_dir().join(format!("one-{}.txt", std::process::id()));
        std::fs::write(&path, &out).unwrap();
        let t = read_file_as_the_one(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(t.names(), ["a", "b", "c"]);
        assert!(
            t.iter().all(|s| s.vehicle.len() == 3),
            "every host at every step"
        );
        let s = t.step(3);
        let b = s.vehicle.iter().position(|&v| v == 1).unwrap();
        assert_eq!((s.x[b], s.y[b]), (1501.0, -6.5), "b back in its spot");
    }

    #[test]
    fn parking_gives_the_one_every_id_at_the_first_step() {
        let mut out = Vec::new();
        write(&sample(), &mut out, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "0 3 0.1 1501 -6.5 193.5");
        // The second line is data (The ONE reads it unchecked), then the mark.
        assert_eq!(lines[1], "0 a 100 50.25");
        assert!(lines[2].starts_with(PARKING_MARK));
        let first: Vec<&str> = lines[3..]
            .iter()
            .filter(|l| l.starts_with("0 "))
            .map(|l| l.split(' ').nth(1).unwrap())
            .collect();
        assert_eq!(first, ["b", "c"]);
        // "b" goes back to its spot (index 1: 200 m east of the lot's start) at 3 s.
        assert!(lines.contains(&"3 b 1501 -6.5"), "{text}");
        // "c", parked since 0 s, is seen standing in its spot at 2 s, the step
        // before it enters, so that The ONE starts moving it at 2 s, not 0 s.
        let c: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.split(' ').nth(1) == Some("c"))
            .collect();
        assert_eq!(c, ["0 c 1301 193.5", "2 c 1301 193.5", "3 c 0.1 0.2"]);
    }

    proptest::proptest! {
        /// Untrusted bytes give a trace or an error, never a panic.
        #[test]
        fn arbitrary_input_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let mut text = b"0 10 0 1 0 1\n".to_vec();
            text.extend_from_slice(&bytes);
            let _ = read(&bytes[..], "fuzz", TraceBuilder::new());
            let _ = read(&text[..], "fuzz", TraceBuilder::new());
        }
    }

    #[test]
    fn bad_lines_are_clear_errors() {
        let e = read(
            "0 10 0 1 0 1\n0 a 1\n".as_bytes(),
            "m.txt",
            TraceBuilder::new(),
        )
        .unwrap_err()
        .0;
        assert!(
            e.contains("m.txt, line 2") && e.contains("not 'time id x y'"),
            "{e}"
        );
        let e = read("hello\n".as_bytes(), "m.txt", TraceBuilder::new())
            .unwrap_err()
            .0;
        assert!(e.contains("not a header"), "{e}");
    }
}
