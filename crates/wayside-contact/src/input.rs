//! Opening trace files: plain or gzip-compressed (by the gzip magic bytes,
//! whatever the file name), as one buffered reader.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::trace::TraceError;

/// Opens `path` for buffered reading, decompressing gzip on the fly.
pub fn open(path: &Path) -> Result<Box<dyn BufRead>, TraceError> {
    let cannot =
        |e: std::io::Error| TraceError(format!("{}: cannot be read ({e})", path.display()));
    let mut f = BufReader::with_capacity(1 << 16, File::open(path).map_err(cannot)?);
    let gz = f.fill_buf().map_err(cannot)?.starts_with(&[0x1f, 0x8b]);
    Ok(if gz {
        Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::bufread::MultiGzDecoder::new(f),
        ))
    } else {
        Box::new(f)
    })
}
