//! Queries across `tracelake worker` processes, on datafusion-distributed: the session
//! plans as always, then the distributed planner cuts the plan into stages that the
//! workers run, exchanging Arrow data over gRPC (Arrow Flight). A worker builds every
//! query's session with the same functions as this process ([`WorkerSessions`]), and
//! reaches the lake's object store by its URL ([`LakeStores`]).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{DataFusionError, Result, internal_err, not_impl_err};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use datafusion::execution::{SessionState, SessionStateBuilder, TaskContext};
use datafusion::logical_expr::Explain;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion::prelude::SessionContext;
use datafusion_distributed::grpc::DefaultChannelResolver;
use datafusion_distributed::{
    ChannelResolver, DistributedConfig, DistributedExt, SessionStateBuilderExt, Worker, WorkerChannel, WorkerQueryContext, WorkerResolver,
    WorkerSessionBuilder, display_plan_ascii,
};
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use object_store::ObjectStore;
use tonic::transport::server::TcpIncoming;
use url::Url;

use super::EngineError;
use super::session::{EngineOptions, runtime_builder};
use super::session_job::{SessionFunctions, SessionJobDecoder, SessionJobExec};
use super::window_memory::ReservedInput;
use crate::lake::remote::{SCHEMES, object_store_for};
use crate::redact::Redactor;

/// The workers' URLs (`http://host:port`), checked.
pub fn worker_urls(workers: &[String]) -> Result<Vec<Url>, EngineError> {
    workers
        .iter()
        .map(|w| {
            let with_scheme = if w.contains("://") { w.clone() } else { format!("http://{w}") };
            Url::parse(&with_scheme).map_err(|source| EngineError::NotAWorkerUrl { worker: w.clone(), source })
        })
        .collect()
}

/// A worker that did not take a connection: before a query (`answers`), or during one,
/// where the channel to it failed ([`NamedChannels`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "the worker at {worker} did not answer: is `tracelake worker --listen {}` running there? \
     Check --workers (or TRACELAKE_WORKERS, traceAnalyzer.workers)",
    listen_address(.worker)
)]
pub struct WorkerUnreachable {
    pub worker: Url,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// `host:port` of a worker's URL, as `tracelake worker --listen` takes it.
fn listen_address(worker: &Url) -> String {
    format!("{}:{}", worker.host_str().unwrap_or_default(), worker.port_or_known_default().unwrap_or(80))
}

/// The default channels to the workers, with a worker that cannot be reached named as
/// such ([`WorkerUnreachable`]) in place of datafusion-distributed's message.
#[derive(Default)]
struct NamedChannels(DefaultChannelResolver);

#[async_trait]
impl ChannelResolver for NamedChannels {
    async fn get_worker_client_for_url(&self, url: &Url) -> Result<Box<dyn WorkerChannel>> {
        self.0
            .get_worker_client_for_url(url)
            .await
            .map_err(|source| DataFusionError::External(Box::new(WorkerUnreachable { worker: url.clone(), source: Box::new(source) })))
    }
}

/// `builder` planning distributed over `workers`, each task of a scan reading about
/// `scan_bytes` of Parquet. Every worker must take a connection: the planner runs a small
/// plan here rather than on a worker, and would not notice one that is gone.
pub fn distribute(
    builder: SessionStateBuilder,
    workers: Vec<Url>,
    scan_bytes: usize,
    jobs: Option<Arc<dyn SessionJobDecoder>>,
) -> Result<SessionStateBuilder, EngineError> {
    for worker in &workers {
        answers(worker)?;
    }
    Ok(builder
        .with_distributed_worker_resolver(Workers(workers))
        .with_distributed_channel_resolver(NamedChannels::default())
        .with_distributed_user_codec(TracelakeCodec { jobs })
        .with_distributed_file_scan_config_bytes_per_partition(scan_bytes.max(1))?
        .with_distributed_planner())
}

/// `builder` planning in this process only, also where the session it came from
/// distributes: for plans over data only this process has (an analysis bucket's rows).
pub fn local_only(builder: SessionStateBuilder) -> SessionStateBuilder {
    builder.with_query_planner(Arc::new(LocalPlanner))
}

#[derive(Debug)]
struct LocalPlanner;

#[async_trait]
impl QueryPlanner for LocalPlanner {
    async fn create_physical_plan(&self, plan: &LogicalPlan, state: &dyn datafusion::catalog::Session) -> Result<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::default().create_physical_plan(plan, state).await
    }
}

/// `EXPLAIN` of a query in a session that distributes: the optimized logical plan and the
/// plan as the workers run it, in stages and tasks (DataFusion's own `EXPLAIN` shows the
/// plan before distribution). `None` for other sessions and for `EXPLAIN VERBOSE`.
pub async fn explain_distributed(ctx: &SessionContext, explain: &Explain) -> Result<Option<RecordBatch>, EngineError> {
    let state = ctx.state();
    if explain.verbose || state.config().options().extensions.get::<DistributedConfig>().is_none() {
        return Ok(None);
    }
    let logical = state.optimize(&explain.plan)?;
    let physical = state.create_physical_plan(&explain.plan).await?;
    let schema = Arc::new(Schema::new(vec![Field::new("plan_type", DataType::Utf8, false), Field::new("plan", DataType::Utf8, false)]));
    let plans = [logical.display_indent().to_string(), display_plan_ascii(physical.as_ref(), false)];
    let columns: Vec<ArrayRef> =
        vec![Arc::new(StringArray::from(vec!["logical_plan", "distributed_plan"])), Arc::new(StringArray::from(plans.to_vec()))];
    Ok(Some(RecordBatch::try_new(schema, columns)?))
}

/// Whether `worker` takes a TCP connection, within a few seconds.
fn answers(worker: &Url) -> Result<(), WorkerUnreachable> {
    let refused = |source: std::io::Error| WorkerUnreachable { worker: worker.clone(), source: Box::new(source) };
    let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
    for addr in worker.socket_addrs(|| Some(80)).map_err(refused)? {
        match std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(3)) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(refused(last))
}

/// A fixed list of workers.
struct Workers(Vec<Url>);

impl WorkerResolver for Workers {
    fn get_urls(&self) -> Result<Vec<Url>, DataFusionError> {
        Ok(self.0.clone())
    }
}

/// Serves plans at `listen` until `stop` completes; `ready` is told the address bound.
/// The jobs over sessions it runs are those of `engine.session_jobs`.
pub async fn serve_worker(
    listen: SocketAddr,
    redactor: Redactor,
    engine: &EngineOptions,
    storage_options: BTreeMap<String, String>,
    ready: impl FnOnce(SocketAddr),
    stop: impl Future<Output = ()>,
) -> Result<(), EngineError> {
    let stores = Arc::new(LakeStores { known: DefaultObjectStoreRegistry::new(), opened: Mutex::default(), options: storage_options });
    // The queries a worker runs at once share one pool, as a process's queries do.
    let (runtime, _spill_dir) = runtime_builder(engine.memory_limit_bytes);
    let runtime = runtime.with_object_store_registry(stores).build_arc()?;
    let sessions = WorkerSessions {
        functions: SessionFunctions { redactor, patterns: Arc::clone(&engine.patterns) },
        jobs: engine.session_jobs.clone(),
    };
    let worker = Worker::from_session_builder(sessions).with_runtime_env(runtime);
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|source| EngineError::Listen { listen, source })?;
    ready(listener.local_addr().map_err(|source| EngineError::Listen { listen, source })?);
    tonic::transport::Server::builder()
        .add_service(worker.into_worker_server())
        .serve_with_incoming_shutdown(TcpIncoming::from(listener), stop)
        .await
        .map_err(|source| EngineError::Serve { listen, source })
}

/// Builds each query's session on a worker: tracelake's functions and plan nodes.
#[derive(Clone)]
struct WorkerSessions {
    functions: SessionFunctions,
    jobs: Option<Arc<dyn SessionJobDecoder>>,
}

#[async_trait]
impl WorkerSessionBuilder for WorkerSessions {
    async fn build_session_state(&self, ctx: WorkerQueryContext) -> Result<SessionState, DataFusionError> {
        let builder = ctx.builder.with_distributed_user_codec(TracelakeCodec { jobs: self.jobs.clone() });
        Ok(self.functions.context(builder)?.state())
    }
}

/// The plan nodes of tracelake's own, across the wire: [`ReservedInput`], and
/// [`SessionJobExec`] with the jobs `jobs` decodes.
#[derive(Debug)]
struct TracelakeCodec {
    jobs: Option<Arc<dyn SessionJobDecoder>>,
}

const RESERVED_INPUT: &[u8] = b"reserved_input";
/// A [`SessionJobExec`]: this, the job's kind, a NUL, then the job's bytes.
const SESSION_JOB: &[u8] = b"session_job:";

impl PhysicalExtensionCodec for TracelakeCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        _ctx: &TaskContext,
        _converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match (buf, inputs) {
            (RESERVED_INPUT, [input]) => Ok(Arc::new(ReservedInput::new(Arc::clone(input)))),
            (job, [input]) if job.starts_with(SESSION_JOB) => {
                let Some(jobs) = &self.jobs else {
                    return internal_err!("this process runs no jobs over sessions: start it with `tracelake worker`");
                };
                let rest = &job[SESSION_JOB.len()..];
                let Some(end) = rest.iter().position(|b| *b == 0) else {
                    return internal_err!("a job over sessions without its kind");
                };
                let job = jobs.decode(&String::from_utf8_lossy(&rest[..end]), &rest[end + 1..])?;
                Ok(Arc::new(SessionJobExec::new(Arc::clone(input), job)?))
            }
            _ => internal_err!("a plan node this tracelake does not know ({} bytes)", buf.len()),
        }
    }

    fn try_encode(&self, node: Arc<dyn ExecutionPlan>, buf: &mut Vec<u8>, _converter: &dyn PhysicalProtoConverterExtension) -> Result<()> {
        if node.is::<ReservedInput>() {
            buf.extend_from_slice(RESERVED_INPUT);
            return Ok(());
        }
        if let Some(exec) = node.downcast_ref::<SessionJobExec>() {
            buf.extend_from_slice(SESSION_JOB);
            buf.extend_from_slice(exec.job().kind().as_bytes());
            buf.push(0);
            buf.extend_from_slice(&exec.job().encode());
            return Ok(());
        }
        not_impl_err!("{} cannot be sent to a worker", node.name())
    }
}

/// The object stores of a worker: the local file system, and each bucket a plan names,
/// opened on first use with the environment's credentials and `storage.options`.
#[derive(Debug)]
struct LakeStores {
    known: DefaultObjectStoreRegistry,
    opened: Mutex<HashMap<String, Arc<dyn ObjectStore>>>,
    options: BTreeMap<String, String>,
}

impl ObjectStoreRegistry for LakeStores {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        self.known.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.known.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        if let Ok(store) = self.known.get_store(url) {
            return Ok(store);
        }
        if !SCHEMES.contains(&url.scheme()) {
            return self.known.get_store(url);
        }
        let bucket = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
        let mut opened = self.opened.lock().expect("no panic holds the lock");
        if let Some(store) = opened.get(&bucket) {
            return Ok(Arc::clone(store));
        }
        let store = object_store_for(url, &self.options).map_err(|e| DataFusionError::External(Box::new(e)))?;
        opened.insert(bucket, Arc::clone(&store));
        Ok(store)
    }
}
