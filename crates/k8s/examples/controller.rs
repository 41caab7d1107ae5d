//! Your own Job controller in Rust: the Jobs whose `spec.managedBy` names this
//! controller, decided by job-decider and applied with kube-rs.
//!
//! ```sh
//! cargo run --example controller -p job-decider-k8s --features kube -- \
//!   --kubeconfig=$HOME/.kube/config --decider=127.0.0.1:50051 --controller-name=example.com/my-controller
//! ```

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use futures::StreamExt;
use job_decider_k8s::apply::Applier;
use job_decider_k8s::client::Connect;
use job_decider_k8s::job_decider_api::pb;
use job_decider_k8s::{Inputs, Job, Pod};
use kube::api::{ListParams, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[tokio::main]
async fn main() -> Res<()> {
    let mut flags: HashMap<String, String> = HashMap::new();
    const KNOWN: [&str; 3] = ["kubeconfig", "decider", "controller-name"];
    for arg in std::env::args().skip(1) {
        match arg.strip_prefix("--").and_then(|a| a.split_once('=')) {
            Some((k, v)) if KNOWN.contains(&k) => {
                flags.insert(k.to_string(), v.to_string());
            }
            // A flag misspelt or given as `--flag value` would otherwise be ignored unseen.
            _ => {
                eprintln!(
                    "controller: unknown argument {arg:?}; use --{}=VALUE",
                    KNOWN.join("=VALUE, --")
                );
                std::process::exit(2);
            }
        }
    }
    let flag = |k: &str, default: &str| flags.get(k).cloned().unwrap_or_else(|| default.into());
    let name = flag("controller-name", "example.com/my-controller");
    let config = match flags.get("kubeconfig") {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?
        }
        None => Config::infer().await?,
    };
    let kube = Client::try_from(config)?;
    let mut decider = Connect::new(flag("decider", "127.0.0.1:50051"))
        .connect()
        .await?;
    let applier = Applier::new(kube.clone());
    let jobs: Api<Job> = Api::all(kube.clone());
    let pods: Api<Pod> = Api::all(kube.clone());
    // The state of the last plan whose status write held, per Job UID: the
    // pod-failure backoff lives there.
    let mut states: HashMap<String, pb::ControllerState> = HashMap::new();
    // When each Job (by namespace/name) is next due.
    let mut due: BTreeMap<(String, String), Instant> = BTreeMap::new();
    loop {
        let list = jobs.list(&ListParams::default()).await?;
        // Forget Jobs gone since the last list.
        due.retain(|(ns, n), _| {
            list.items.iter().any(|j| {
                j.metadata.namespace.as_deref() == Some(ns) && j.metadata.name.as_deref() == Some(n)
            })
        });
        for job in list.items.iter() {
            if job.spec.as_ref().and_then(|s| s.managed_by.as_deref()) != Some(name.as_str()) {
                continue;
            }
            let key = (
                job.metadata.namespace.clone().unwrap_or_default(),
                job.metadata.name.clone().unwrap_or_default(),
            );
            if due.get(&key).is_some_and(|at| *at > Instant::now()) {
                continue;
            }
            let wait = match sync(&mut decider, &applier, &kube, job, &name, &mut states).await {
                Ok(wait) => wait,
                Err(e) => {
                    println!("job {}/{}: error: {e}", key.0, key.1);
                    Duration::from_millis(500)
                }
            };
            due.insert(key, Instant::now() + wait);
        }
        // Wake on any Job or pod change, or when the next Job is due.
        let sleep = due.values().min().map_or(Duration::from_secs(60), |at| {
            at.saturating_duration_since(Instant::now())
        });
        let rv = list.metadata.resource_version.clone().unwrap_or_default();
        let wp = WatchParams::default().timeout(290);
        let pod_wp = wp.clone().labels("batch.kubernetes.io/controller-uid");
        let mut job_events = jobs.watch(&wp, &rv).await?.boxed();
        // One resourceVersion for both: the API server numbers all its objects in one sequence.
        let mut pod_events = pods.watch(&pod_wp, &rv).await?.boxed();
        let woke_by_event = tokio::select! {
            e = job_events.next() => e.is_some(),
            e = pod_events.next() => e.is_some(),
            _ = tokio::time::sleep(sleep) => false,
        };
        if woke_by_event {
            // A change: every Job is synced again from a fresh list.
            due.clear();
        }
    }
}

/// One sync of one Job: a fresh list of its pods, a decision, the plan applied.
async fn sync(
    decider: &mut pb::job_decider_client::JobDeciderClient<job_decider_k8s::client::Retrying>,
    applier: &Applier,
    kube: &Client,
    job: &Job,
    name: &str,
    states: &mut HashMap<String, pb::ControllerState>,
) -> Res<Duration> {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let selector = format!("batch.kubernetes.io/controller-uid={uid}");
    let pods = Api::<Pod>::namespaced(kube.clone(), &ns)
        .list(&ListParams::default().labels(&selector))
        .await?;
    let mut inputs = Inputs::at(job_decider_k8s::now()?);
    inputs.controller_name = name.to_string();
    let mut request = job_decider_k8s::request(job, pods.items.iter(), &inputs);
    request.state = states.get(&uid).cloned();
    let plan = decider.decide_job(request).await?.into_inner();
    let after = plan
        .requeue_after
        .as_ref()
        .map_or(Duration::from_secs(5), |d| {
            Duration::new(
                d.seconds.max(0).unsigned_abs(),
                d.nanos.max(0).unsigned_abs(),
            )
        });
    let job_name = job.metadata.name.clone().unwrap_or_default();
    println!(
        "job {ns}/{job_name}: {} pods, {} actions",
        pods.items.len(),
        plan.actions.len()
    );
    let holds = match applier.apply(job, &plan).await {
        Ok(outcome) => outcome.state_holds(),
        Err(e) => {
            if e.state_holds() {
                states.insert(uid, plan.state.unwrap_or_default());
            }
            return Err(e.into());
        }
    };
    if holds {
        states.insert(uid, plan.state.unwrap_or_default());
    }
    Ok(if plan.actions.is_empty() {
        after.max(Duration::from_millis(200))
    } else {
        // The plan wrote: sync again at once from a fresh read.
        Duration::ZERO
    })
}
