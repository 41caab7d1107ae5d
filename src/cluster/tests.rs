use super::*;

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[test]
fn the_plugin_reads_from_the_cluster_unless_a_file_is_named() {
    let plugin = "/usr/local/bin/kubectl-job_decider";
    assert_eq!(
        plugin_args(os(&[plugin, "decide", "-n", "ns", "pi"])),
        os(&[plugin, "decide", "--from-cluster", "-n", "ns", "pi"])
    );
    assert_eq!(
        plugin_args(os(&[plugin, "validate", "pi"])),
        os(&[plugin, "validate", "--from-cluster", "pi"])
    );
    for unchanged in [
        vec![plugin, "decide", "--job", "job.yaml"],
        vec![plugin, "request", "--job=job.yaml"],
        vec![plugin, "decide", "--from-cluster", "pi"],
        vec![plugin, "serve"],
        vec![plugin, "jobset", "validate", "js.yaml"],
        vec![plugin],
    ] {
        assert_eq!(plugin_args(os(&unchanged)), os(&unchanged), "{unchanged:?}");
    }
}

#[test]
fn only_the_plugin_name_changes_the_command_line() {
    for argv0 in [
        "job-decider",
        "/bin/job-decider",
        "kubectl-job-decider",
        "kubectl",
    ] {
        let args = os(&[argv0, "decide", "pi"]);
        assert_eq!(plugin_args(args.clone()), args, "{argv0}");
    }
    assert!(is_plugin(Path::new("./kubectl-job_decider")));
    assert!(!is_plugin(Path::new("kubectl-job_decider-old")));
}

#[test]
fn bad_input_and_cluster_failures_exit_differently() {
    let not_found = ClusterError::NotFound {
        namespace: "ns".into(),
        name: "pi".into(),
    };
    assert!(not_found.is_bad_input());
    assert_eq!(
        not_found.to_string(),
        r#"job "pi" not found in namespace "ns""#
    );
    assert!(ClusterError::Config("no kubeconfig".into()).is_bad_input());
    assert!(!ClusterError::Denied("forbidden".into()).is_bad_input());
    assert!(!ClusterError::Unreachable("refused".into()).is_bad_input());
}
