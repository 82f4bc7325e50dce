//! SUMO floating-car data (FCD) XML, read as a stream.
//!
//! The format (SUMO's `--fcd-output`, see the "FCDOutput" page of the SUMO
//! documentation): `<timestep time="…">` elements, each holding one
//! `<vehicle id="…" x="…" y="…" …/>` per vehicle in the network at that
//! time; other attributes (speed, angle, lane…) and other elements
//! (`person`, `container`) are skipped. The file is parsed event by event
//! with quick-xml, so memory holds only the compact [`Trace`], never the
//! document.

use std::borrow::Cow;
use std::io::BufRead;
use std::path::Path;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use crate::input;
use crate::trace::{Trace, TraceBuilder, TraceError};

/// Reads an FCD XML file (plain or gzip); see [`read`].
pub fn read_file(path: &Path, builder: TraceBuilder) -> Result<Trace, TraceError> {
    read(input::open(path)?, &path.display().to_string(), builder)
}

/// Reads FCD XML from `src` into `builder` (which may hold a time window);
/// `name` labels error messages.
pub fn read(src: impl BufRead, name: &str, mut builder: TraceBuilder) -> Result<Trace, TraceError> {
    let mut reader = Reader::from_reader(src);
    let mut buf = Vec::with_capacity(512);
    let mut time: Option<f64> = None;
    let mut seen_root = false;
    loop {
        let pos = reader.buffer_position();
        let at = || format!("{name}, byte {pos}");
        let ev = reader
            .read_event_into(&mut buf)
            .map_err(|e| TraceError(format!("{}: not well-formed XML ({e})", at())))?;
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                match e.name().as_ref() {
                    b"fcd-export" => seen_root = true,
                    b"timestep" => {
                        let t = number(e, b"time", &at)?.ok_or_else(|| {
                            TraceError(format!("{}: <timestep> without a time attribute", at()))
                        })?;
                        builder.empty_step(t);
                        time = if empty { None } else { Some(t) };
                    }
                    b"vehicle" => {
                        let t = time.ok_or_else(|| {
                            TraceError(format!("{}: <vehicle> outside a <timestep>", at()))
                        })?;
                        let (id, x, y) = vehicle(e, &at)?;
                        builder.push(t, &id, x, y, &at)?;
                    }
                    _ => {}
                }
            }
            Event::End(ref e) if e.name().as_ref() == b"timestep" => time = None,
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !seen_root {
        return Err(TraceError(format!(
            "{name}: no <fcd-export> element: not a SUMO FCD XML file"
        )));
    }
    Ok(builder.finish())
}

fn attr_text(
    e: &BytesStart<'_>,
    key: &[u8],
    at: &dyn Fn() -> String,
) -> Result<Option<String>, TraceError> {
    for a in e.attributes() {
        let a = a.map_err(|err| TraceError(format!("{}: bad attribute ({err})", at())))?;
        if a.key.as_ref() == key {
            let v = a
                .unescape_value()
                .map_err(|err| TraceError(format!("{}: bad attribute value ({err})", at())))?;
            return Ok(Some(v.into_owned()));
        }
    }
    Ok(None)
}

fn number(
    e: &BytesStart<'_>,
    key: &[u8],
    at: &dyn Fn() -> String,
) -> Result<Option<f64>, TraceError> {
    let Some(v) = attr_text(e, key, at)? else {
        return Ok(None);
    };
    v.trim().parse::<f64>().map(Some).map_err(|_| {
        TraceError(format!(
            "{}: {}=\"{v}\" is not a number",
            at(),
            String::from_utf8_lossy(key)
        ))
    })
}

/// (id, x, y) of a `<vehicle>` element, in one pass over its attributes;
/// the id is borrowed from the parser's buffer unless it has escapes.
fn vehicle<'a>(
    e: &'a BytesStart<'_>,
    at: &dyn Fn() -> String,
) -> Result<(Cow<'a, str>, f64, f64), TraceError> {
    let (mut id, mut x, mut y) = (None, None, None);
    for a in e.attributes() {
        let a = a.map_err(|err| TraceError(format!("{}: bad attribute ({err})", at())))?;
        let num = |v: &[u8], k: &str| {
            std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .ok_or_else(|| {
                    TraceError(format!(
                        "{}: <vehicle> {k}=\"{}\" is not a number",
                        at(),
                        String::from_utf8_lossy(v)
                    ))
                })
        };
        match a.key.as_ref() {
            b"id" => {
                id = Some(
                    a.unescape_value()
                        .map_err(|err| TraceError(format!("{}: bad id ({err})", at())))?,
                )
            }
            b"x" => x = Some(num(&a.value, "x")?),
            b"y" => y = Some(num(&a.value, "y")?),
            _ => {}
        }
    }
    match (id, x, y) {
        (Some(id), Some(x), Some(y)) => Ok((id, x, y)),
        _ => Err(TraceError(format!(
            "{}: <vehicle> needs id, x and y attributes (write the trace with --fcd-output.attributes including x,y, not --fcd-output.geo)",
            at()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<fcd-export xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
    <timestep time="0.00">
        <vehicle id="a" x="10.50" y="20.00" angle="90.00" type="DEFAULT_VEHTYPE" speed="0.00" pos="5.10" lane="e1_0" slope="0.00"/>
    </timestep>
    <timestep time="1.00">
        <vehicle id="a" x="20.50" y="20.00" speed="10.00"/>
        <person id="p" x="1" y="1"/>
        <vehicle id="b&amp;c" x="0" y="0"/>
    </timestep>
    <timestep time="2.00"/>
</fcd-export>
"#;

    #[test]
    fn reads_vehicles_per_timestep_and_skips_the_rest() {
        let t = read(SAMPLE.as_bytes(), "sample", TraceBuilder::new()).unwrap();
        assert_eq!(t.names(), ["a", "b&c"]);
        assert_eq!(t.times(), [0.0, 1.0, 2.0]);
        let s = t.step(1);
        assert_eq!(
            (s.vehicle, s.x, s.y),
            (&[0u32, 1][..], &[20.5f32, 0.0][..], &[20.0f32, 0.0][..])
        );
        assert!(t.step(2).vehicle.is_empty());
    }

    proptest::proptest! {
        /// Untrusted bytes give a trace or an error, never a panic: arbitrary
        /// bytes, and the sample with bytes overwritten.
        #[test]
        fn arbitrary_input_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
                                        at in 0usize..SAMPLE.len()) {
            let _ = read(&bytes[..], "fuzz", TraceBuilder::new());
            let mut b = SAMPLE.as_bytes().to_vec();
            let end = (at + bytes.len()).min(b.len());
            b[at..end].copy_from_slice(&bytes[..end - at]);
            let _ = read(&b[..], "fuzz", TraceBuilder::new());
        }
    }

    #[test]
    fn errors_name_the_place_and_the_problem() {
        let bad = SAMPLE.replace(r#"x="20.50""#, r#"x="east""#);
        let e = read(bad.as_bytes(), "sample", TraceBuilder::new())
            .unwrap_err()
            .0;
        assert!(
            e.contains("sample, byte") && e.contains("x=\"east\" is not a number"),
            "{e}"
        );
        let e = read(
            SAMPLE.replace(r#" y="0""#, "").as_bytes(),
            "s",
            TraceBuilder::new(),
        )
        .unwrap_err()
        .0;
        assert!(e.contains("needs id, x and y"), "{e}");
        let e = read("<routes/>".as_bytes(), "r.xml", TraceBuilder::new())
            .unwrap_err()
            .0;
        assert!(e.contains("not a SUMO FCD XML file"), "{e}");
    }
}
