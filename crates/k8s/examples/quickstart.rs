//! Decide a Job from `kubectl get -o json` files on a running job-decider:
//! `cargo run -p job-decider-k8s --example quickstart -- job.json pods.json`.
use job_decider_k8s::client::Connect;
use job_decider_k8s::{Inputs, Job, Pod, now, request};
use tonic_types::StatusExt;

#[derive(serde::Deserialize)]
struct PodList {
    items: Vec<Pod>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::var("JOB_DECIDER_ADDR").unwrap_or("127.0.0.1:50051".into());
    let args: Vec<String> = std::env::args().collect();
    let [_, job, pods] = &args[..] else {
        return Err("usage: quickstart JOB.json PODS.json".into());
    };
    let job: Job = serde_json::from_str(&std::fs::read_to_string(job)?)?;
    let pods: PodList = serde_json::from_str(&std::fs::read_to_string(pods)?)?;
    // host:port, dns:///host:port or unix:///path; retries, deadline, keepalive: client::defaults.
    let mut client = Connect::new(addr).connect().await?;
    match client
        .decide_job(request(&job, &pods.items, &Inputs::at(now()?)))
        .await
    {
        Ok(plan) => {
            for action in plan.into_inner().actions {
                println!("{}", serde_json::to_string(&action)?);
            }
        }
        Err(status) => {
            eprintln!("{:?}: {}", status.code(), status.message());
            for v in status
                .get_details_bad_request()
                .map(|b| b.field_violations)
                .unwrap_or_default()
            {
                eprintln!("  {}: {}", v.field, v.description);
            }
            if let Some(info) = status.get_details_error_info() {
                eprintln!("  reason: {} ({})", info.reason, info.domain);
            }
            std::process::exit(1);
        }
    }
    Ok(())
}
