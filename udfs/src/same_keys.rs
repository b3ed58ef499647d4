//! Whether two rows of a window partition have equal keys (any column types; nulls equal).

use datafusion::arrow::array::{ArrayRef, DynComparator, make_comparator};
use datafusion::arrow::compute::SortOptions;
use datafusion::common::Result;

/// Compares rows by the key columns given.
pub(crate) struct SameKeys(Vec<DynComparator>);

impl SameKeys {
    pub fn new(keys: &[ArrayRef]) -> Result<Self> {
        let comparators = keys.iter().map(|key| make_comparator(key.as_ref(), key.as_ref(), SortOptions::default()));
        Ok(Self(comparators.collect::<Result<_, _>>()?))
    }

    pub fn same(&self, a: usize, b: usize) -> bool {
        self.0.iter().all(|cmp| cmp(a, b).is_eq())
    }
}
