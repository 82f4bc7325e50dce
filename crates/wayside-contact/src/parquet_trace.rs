//! Reading a trace from a Parquet table (ours, or SUMO's tabular FCD) row
//! group by row group, so that memory is the trace's compact columns plus
//! one batch of rows.
//!
//! Only the four columns a trace needs are decoded: time, vehicle, x and y
//! (ours), or SUMO's `timestep_time`, `vehicle_id`, `vehicle_x`,
//! `vehicle_y`. A row without a vehicle is SUMO's mark of an empty time
//! step and is skipped. Vehicle names are interned once per dictionary
//! (a dictionary-encoded column repeats one dictionary over a row group).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt32Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::trace::{Trace, TraceBuilder, TraceError};

/// The column names a trace table may have: SUMO's tabular FCD output
/// (its XML attribute paths), then ours.
pub const COLUMNS: [[&str; 4]; 2] = [
    ["timestep_time", "vehicle_id", "vehicle_x", "vehicle_y"],
    ["time", "vehicle", "x", "y"],
];

/// Rows decoded at a time.
const BATCH_ROWS: usize = 1 << 16;

/// The four columns among `names`, or an error naming what is allowed.
pub fn columns(label: &str, names: &[&str]) -> Result<[&'static str; 4], TraceError> {
    COLUMNS
        .iter()
        .find(|c| c.iter().all(|n| names.contains(n)))
        .copied()
        .ok_or_else(|| {
            TraceError(format!(
                "{label}: needs the columns {} (SUMO) or {}; it has {}",
                COLUMNS[0].join(", "),
                COLUMNS[1].join(", "),
                names.iter().take(8).copied().collect::<Vec<_>>().join(", ")
            ))
        })
}

/// Reads the Parquet file `path` into `b` (which may hold a time window).
pub fn read(path: &Path, mut b: TraceBuilder) -> Result<Trace, TraceError> {
    let label = path.display().to_string();
    let err = |e: &dyn std::fmt::Display| TraceError(format!("{label}: {e}"));
    let file = File::open(path).map_err(|e| err(&format!("cannot be read ({e})")))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| err(&e))?;
    let fields: Vec<&str> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    let cols = columns(&label, &fields)?;
    let roots: Vec<usize> = cols
        .iter()
        .map(|c| fields.iter().position(|f| f == c).expect("found above"))
        .collect();
    let rows = reader.metadata().file_metadata().num_rows();
    b.reserve(usize::try_from(rows).unwrap_or(0));
    let mask = ProjectionMask::roots(reader.parquet_schema(), roots);
    let batches = reader
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| err(&e))?;
    let mut names = Names::default();
    let mut row = 0usize;
    for batch in batches {
        let batch = batch.map_err(|e| err(&e))?;
        let col = |name: &str| batch.column_by_name(name).expect("projected").clone();
        let [t, v, x, y] = cols.map(col);
        push_batch(&mut b, &mut names, [t, v, x, y], &cols, &label, row)?;
        row += batch.num_rows();
    }
    Ok(b.finish())
}

/// The builder's index of each vehicle name of the current dictionary.
#[derive(Default)]
struct Names {
    dictionary: Option<ArrayRef>,
    index: Vec<u32>,
}

impl Names {
    /// Indices for `values` (a string array), reused while the dictionary
    /// is the same.
    fn of(&mut self, values: &ArrayRef, b: &mut TraceBuilder) -> &[u32] {
        let same = self
            .dictionary
            .as_ref()
            .is_some_and(|d| Arc::ptr_eq(d, values) || d.to_data() == values.to_data());
        if !same {
            let s = values.as_string::<i32>();
            self.index = (0..s.len())
                .map(|i| b.intern(if s.is_null(i) { "" } else { s.value(i) }))
                .collect();
            self.dictionary = Some(values.clone());
        }
        &self.index
    }
}

fn push_batch(
    b: &mut TraceBuilder,
    names: &mut Names,
    [t, v, x, y]: [ArrayRef; 4],
    cols: &[&str; 4],
    label: &str,
    first_row: usize,
) -> Result<(), TraceError> {
    let bad = |what: String| {
        TraceError(format!(
            "{label}: {what}; the columns must be {}: numbers (time, x, y) and vehicle names, \
             every row with a vehicle complete",
            cols.join(", ")
        ))
    };
    let number = |a: &ArrayRef, name: &str| -> Result<ArrayRef, TraceError> {
        if !a.data_type().is_numeric() {
            return Err(bad(format!("{name} is {}", a.data_type())));
        }
        arrow_cast::cast(a, &DataType::Float64).map_err(|e| bad(format!("{name}: {e}")))
    };
    let (t, x, y) = (
        number(&t, cols[0])?,
        number(&x, cols[2])?,
        number(&y, cols[3])?,
    );
    let (t, x, y) = (
        t.as_primitive::<Float64Type>(),
        x.as_primitive::<Float64Type>(),
        y.as_primitive::<Float64Type>(),
    );
    let dict = DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8));
    let text =
        |d: &DataType| matches!(d, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let names_or_codes = match v.data_type() {
        DataType::Dictionary(_, s) => text(s),
        d => text(d),
    };
    let v = if v.data_type() == &dict {
        v
    } else if names_or_codes {
        arrow_cast::cast(&v, &dict).map_err(|e| bad(format!("{}: {e}", cols[1])))?
    } else {
        return Err(bad(format!("{} is {}", cols[1], v.data_type())));
    };
    let v = v.as_dictionary::<UInt32Type>();
    let index = names.of(v.values(), b);
    let gaps = [(t, cols[0]), (x, cols[2]), (y, cols[3])]
        .into_iter()
        .filter(|(a, _)| a.null_count() > 0)
        .collect::<Vec<_>>();
    for i in 0..v.len() {
        if v.is_null(i) {
            continue; // SUMO's row for an empty time step
        }
        if let Some((_, name)) = gaps.iter().find(|(a, _)| a.is_null(i)) {
            return Err(bad(format!("{name} has nulls")));
        }
        let row = first_row + i;
        let code = v.keys().value(i) as usize;
        let id = *index.get(code).ok_or_else(|| {
            TraceError(format!(
                "{label}, row {row}: vehicle code {code} has no name"
            ))
        })?;
        b.push_index(t.value(i), id, x.value(i), y.value(i), &|| {
            format!("{label}, row {row}")
        })?;
    }
    Ok(())
}
