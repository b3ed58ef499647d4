//! The detectors: the built-in signals' SQL and the user's detector files.

use std::path::{Path, PathBuf};

use super::DetectError;
use super::header::{DetectorHeader, Scope};
use super::signals::{Signal, signals};

#[derive(Debug, Clone)]
pub struct Detector {
    /// The signal id for built-ins; the file name for user detectors.
    pub name: String,
    pub sql: String,
    pub builtin: bool,
    pub scope: Scope,
}

/// The built-in detectors, in the spec's order.
pub fn builtin_detectors() -> Vec<Detector> {
    signals().iter().map(Detector::of).collect()
}

/// The built-in detectors `config` leaves enabled.
pub fn enabled_builtin_detectors(config: &crate::config::Config) -> Vec<Detector> {
    signals().iter().filter(|s| s.enabled_in(config)).map(Detector::of).collect()
}

impl Detector {
    /// The detector of a built-in signal.
    fn of(signal: &Signal) -> Self {
        Detector { name: signal.id.clone(), sql: signal.sql.to_owned(), builtin: true, scope: signal.scope }
    }
}

/// The `.sql` files in `dir`, in name order.
pub fn sql_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "sql") && p.is_file())
        .collect();
    paths.sort();
    Ok(paths)
}

/// Every `.sql` file in `dir`, sorted by name, that its header leaves enabled.
pub fn user_detectors(dir: &Path) -> Result<Vec<Detector>, DetectError> {
    let unreadable = |source| DetectError::DetectorDir { path: dir.display().to_string(), source };
    let paths = sql_files(dir).map_err(unreadable)?;
    let mut detectors = Vec::new();
    for path in paths {
        let sql = std::fs::read_to_string(&path).map_err(unreadable)?;
        let header = DetectorHeader::parse(&sql)
            .map_err(|source| DetectError::DetectorHeader { path: path.display().to_string(), source: Box::new(source) })?;
        if header.enabled {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            detectors.push(Detector { name, sql, builtin: false, scope: header.scope });
        }
    }
    Ok(detectors)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::physical_plan::ExecutionPlan;
    use datafusion::physical_plan::filter::FilterExec;

    use super::*;
    use crate::engine::session::{EngineOptions, memory_session};
    use crate::redact::Redactor;

    /// The filters of `plan` and of every node under it.
    fn filters(plan: &Arc<dyn ExecutionPlan>) -> Vec<String> {
        let own = plan.downcast_ref::<FilterExec>().map(|f| f.predicate().to_string());
        own.into_iter().chain(plan.children().into_iter().flat_map(filters)).collect()
    }

    #[tokio::test]
    async fn sig_unanswered_tests_the_text_of_last_turns_only() {
        let opts = EngineOptions::default();
        let ctx = memory_session(Vec::new(), Redactor::builtin(), &opts).await.unwrap();
        let detector = builtin_detectors().into_iter().find(|d| d.name == "SIG-UNANSWERED").unwrap();
        let plan = ctx.sql(&opts.sql_params.fill(&detector.sql)).await.unwrap().create_physical_plan().await.unwrap();
        let text_tests: Vec<String> = filters(&plan).into_iter().filter(|f| f.contains("is_question")).collect();
        // Below the join, a filter would test every user message of every chain.
        assert!(text_tests.is_empty(), "the text tests are a filter of their own: {text_tests:?}");
        let shown = datafusion::physical_plan::displayable(plan.as_ref()).indent(true).to_string();
        assert!(shown.contains("is_question"), "{shown}");
    }
}
