//! Trace tables as Arrow record batches, handed to Python through the Arrow
//! C stream interface (`__arrow_c_stream__`, a PyCapsule), so that pyarrow,
//! polars, pandas or any other consumer imports them without a copy. The
//! batches own the trace's vectors, moved, not copied.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::types::{
    ArrowPrimitiveType, Float32Type, Float64Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    ArrayRef, DictionaryArray, PrimitiveArray, RecordBatch, RecordBatchIterator, StringArray,
};
use arrow_schema::{ArrowError, Field, Schema};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use wayside_sim::trace::Column;

/// One trace table: a single record batch, exported as an Arrow stream.
#[pyclass(frozen, name = "Table", module = "wayside._native")]
pub struct Table {
    batch: RecordBatch,
}

#[pymethods]
impl Table {
    /// The table as an Arrow C stream (a PyCapsule named
    /// "arrow_array_stream") of one batch; each call exports the same
    /// buffers again. `requested_schema` is accepted and not applied: the
    /// PyCapsule interface lets a producer keep its own schema.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new([Ok(self.batch.clone())], self.batch.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new(py, stream, Some(c"arrow_array_stream".to_owned()))
    }
}

fn primitive<T: ArrowPrimitiveType>(v: Cow<'_, [T::Native]>) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(v.into_owned().into(), None))
}

/// The node names as a node column's dictionary: the run's nodes, then
/// "broadcast" (the index one past the last node).
pub fn node_dictionary(names: &[String]) -> ArrayRef {
    let all = names.iter().map(String::as_str).chain(["broadcast"]);
    Arc::new(StringArray::from_iter_values(all))
}

fn column(col: Column<'static>, nodes: &ArrayRef) -> Result<ArrayRef, ArrowError> {
    Ok(match col {
        Column::U8(v) => primitive::<UInt8Type>(v),
        Column::U16(v) => primitive::<UInt16Type>(v),
        Column::U32(v) => primitive::<UInt32Type>(v),
        Column::U64(v) => primitive::<UInt64Type>(v),
        Column::F32(v) => primitive::<Float32Type>(v),
        Column::F64(v) => primitive::<Float64Type>(v),
        Column::Node(v) => {
            // u32::MAX (broadcast) becomes the index one past the last node.
            let broadcast = (nodes.len() - 1) as u32;
            let mut idx = v.into_owned();
            idx.iter_mut()
                .filter(|i| **i == u32::MAX)
                .for_each(|i| *i = broadcast);
            let keys = PrimitiveArray::<UInt32Type>::new(idx.into(), None);
            Arc::new(DictionaryArray::try_new(keys, nodes.clone())?)
        }
        Column::Category(v, names) => {
            let keys = PrimitiveArray::<UInt8Type>::new(v.into_owned().into(), None);
            let values = Arc::new(StringArray::from(names.to_vec()));
            Arc::new(DictionaryArray::try_new(keys, values)?)
        }
    })
}

/// A trace table's columns (`Trace::into_tables`) as a `Table`; `nodes` is
/// `node_dictionary` of the run. Fields are nullable, as pyarrow declares
/// columns by default, though no value is ever null.
pub fn table(columns: Vec<(&'static str, Column<'static>)>, nodes: &ArrayRef) -> PyResult<Table> {
    let build = || -> Result<RecordBatch, ArrowError> {
        let mut fields = Vec::with_capacity(columns.len());
        let mut arrays = Vec::with_capacity(columns.len());
        for (name, col) in columns {
            let array = column(col, nodes)?;
            fields.push(Field::new(name, array.data_type().clone(), true));
            arrays.push(array);
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
    };
    build()
        .map(|batch| Table { batch })
        .map_err(|e| PyRuntimeError::new_err(format!("trace table as Arrow: {e}")))
}
