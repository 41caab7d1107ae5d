//! Every Job, Pod and JobSet the project ships (the vectors' requests and the
//! bundled examples) is strictly valid: each field is in the Kubernetes schema
//! of its kind, so the strict reader the CLI uses accepts them as they are
//! (the vectors' int64 strings, proto3 JSON's form, written as numbers).

use std::path::{Path, PathBuf};

use job_decider::documents;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

fn json(value: &serde_json::Value) -> String {
    serde_json::to_string(value).expect("JSON")
}

/// The contract's int64 fields by JSON name: proto3 JSON (the vectors' form)
/// may write them as strings, which a manifest may not.
const INT64_FIELDS: &[&str] = &[
    "generation",
    "observedGeneration",
    "activeDeadlineSeconds",
    "deletionGracePeriodSeconds",
];

/// A vector's object (proto3 JSON) as a manifest: its int64 strings as the
/// numbers the API server's JSON has; everything else as it is.
fn manifest(value: &serde_json::Value) -> String {
    fn numbers(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, field) in map.iter_mut() {
                    if let serde_json::Value::String(text) = field
                        && INT64_FIELDS.contains(&key.as_str())
                    {
                        let n: i64 = text.parse().expect("an int64 as proto3 JSON writes it");
                        *field = n.into();
                    } else {
                        numbers(field);
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(numbers),
            _ => {}
        }
    }
    let mut value = value.clone();
    numbers(&mut value);
    json(&value)
}

#[test]
fn every_vector_job_and_pod_is_strictly_valid() {
    let mut checked = 0;
    for path in yaml_files(&root().join("tests/vectors")) {
        let text = std::fs::read_to_string(&path).expect("read");
        let vector: serde_json::Value = serde_yaml::from_str(&text).expect("YAML");
        let request = &vector["request"];
        let name = path.display().to_string();
        if let Some(job) = request.get("job") {
            documents::parse_job(&manifest(job), &format!("{name}: job"))
                .unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
        if let Some(pods) = request.get("pods") {
            documents::parse_pods(&manifest(pods), &format!("{name}: pods"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(checked > 100, "{checked} vectors");
}

#[test]
fn every_jobset_vector_is_strictly_valid() {
    let mut checked = 0;
    for path in yaml_files(&root().join("tests/vectors/jobset")) {
        let text = std::fs::read_to_string(&path).expect("read");
        let vector: serde_json::Value = serde_yaml::from_str(&text).expect("YAML");
        let request = &vector["request"];
        let name = path.display().to_string();
        if let Some(jobset) = request.get("jobSet") {
            documents::parse_jobset(&manifest(jobset), &format!("{name}: jobSet"))
                .unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
        if let Some(jobs) = request.get("jobs") {
            documents::parse_jobs(&manifest(jobs), &format!("{name}: jobs"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(checked > 10, "{checked} vectors");
}

#[test]
fn every_example_is_strictly_valid() {
    let mut checked = 0;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    // examples/simulate holds a directory per simulation: its Jobs are checked too.
    let nested: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).expect("dir"))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.extend(nested);
    dirs.sort();
    for dir in dirs {
        for entry in std::fs::read_dir(&dir).expect("dir") {
            let path = entry.expect("entry").path();
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read");
            let name = path.display().to_string();
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let result = match stem {
                "job" | "compare" => documents::parse_job(&text, &name).map(drop),
                "pods" => documents::parse_pods(&text, &name).map(drop),
                "jobs" => documents::parse_jobs(&text, &name).map(drop),
                "jobset" => documents::parse_jobset(&text, &name).map(drop),
                _ => continue,
            };
            result.unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} files");
}

// ---------------------------------------------------------------------------------------------
// The CLI: strict input, --lenient, manifests as written, stdin.

use std::process::Output;

use job_decider_api::{self as api, pb};

const NOW: &str = "2025-06-02T10:00:00Z";

fn example(dir: &str, file: &str) -> String {
    root()
        .join("examples")
        .join(dir)
        .join(file)
        .display()
        .to_string()
}

/// `job-decider` with `stdin` (empty when none) as its standard input.
fn run(args: &[&str], stdin: &[u8]) -> Output {
    crate::common::run_with_stdin(args, stdin)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A file in `dir` with `text`, by path.
fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

/// The stored example Job with one change made to its JSON.
fn changed_job(change: impl FnOnce(&mut serde_json::Value)) -> String {
    let text = std::fs::read_to_string(example("kep-3329-failjob-exit-code-42", "job.json"))
        .expect("example");
    let mut job: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    change(&mut job);
    serde_json::to_string_pretty(&job).expect("JSON")
}

fn assert_rejected(out: &Output, args: &[&str], want: &str) {
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(out));
    assert!(
        stderr(out).contains(want),
        "{args:?}: want {want:?} in {}",
        stderr(out)
    );
    assert!(out.stdout.is_empty(), "{args:?}");
}

/// Typos in Job and Pod files, at several depths, are errors naming the path,
/// for every command that reads the file; so are a wrong apiVersion and kind.
#[test]
fn typos_at_every_depth_are_errors_naming_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pods = example("kep-3329-failjob-exit-code-42", "pods.json");
    let jobs: Vec<(String, &str)> = vec![
        (
            changed_job(|j| {
                let spec = j["spec"].as_object_mut().unwrap();
                let limit = spec.remove("backoffLimit").unwrap();
                spec.insert("backofLimit".into(), limit);
            }),
            "spec.backofLimit: unknown field",
        ),
        (
            changed_job(|j| {
                j["spec"]["podFailurePolicy"]["rules"][0]["onPodCondition"] =
                    serde_json::json!([{"type": "DisruptionTarget"}]);
            }),
            "spec.podFailurePolicy.rules[0].onPodCondition: unknown field",
        ),
        (
            changed_job(|j| {
                j["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] =
                    serde_json::json!("Always");
            }),
            "spec.template.spec.containers[0].imagePullPolicyy: unknown field",
        ),
        (
            changed_job(|j| j["apiVersion"] = serde_json::json!("batch/v2")),
            "apiVersion: expected batch/v1 for kind Job, found batch/v2",
        ),
        (
            changed_job(|j| j["kind"] = serde_json::json!("Jobs")),
            "kind: expected Job, found Jobs",
        ),
    ];
    for (i, (text, want)) in jobs.iter().enumerate() {
        let job = write(&dir, &format!("job-{i}.json"), text);
        for args in [
            vec!["validate", &job],
            vec!["decide", "--job", &job, "--pods", &pods, "--now", NOW],
            vec!["request", "--job", &job, "--pods", &pods, "--now", NOW],
        ] {
            assert_rejected(&run(&args, b""), &args, want);
        }
    }
    let pod_text = std::fs::read_to_string(&pods).expect("pods");
    let mut list: serde_json::Value = serde_json::from_str(&pod_text).expect("JSON");
    // Pod 1 is running; its container's state gets a terminated part with a typo.
    list["items"][1]["status"]["containerStatuses"][0]["state"]["terminated"] =
        serde_json::json!({"exitCode": 1, "exitcode": 1});
    let bad_pods = write(&dir, "pods.json", &list.to_string());
    let job = example("kep-3329-failjob-exit-code-42", "job.json");
    let want = "items[1].status.containerStatuses[0].state.terminated.exitcode: unknown field";
    for args in [
        vec!["decide", "--job", &job, "--pods", &bad_pods, "--now", NOW],
        vec!["request", "--job", &job, "--pods", &bad_pods, "--now", NOW],
    ] {
        assert_rejected(&run(&args, b""), &args, want);
    }
    // JobSet files: the JobSet's Job template and the child Jobs.
    let jobset = write(
        &dir,
        "jobset.yaml",
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js, uid: u}\nspec:\n  replicatedJobs:\n  - name: w\n    replicas: 1\n    template:\n      spec: {backofLimit: 1}\n",
    );
    let want = "spec.replicatedJobs[0].template.spec.backofLimit: unknown field";
    for args in [
        vec!["jobset", "validate", &jobset],
        vec!["jobset", "decide", "--jobset", &jobset, "--now", NOW],
    ] {
        assert_rejected(&run(&args, b""), &args, want);
    }
    let child_jobs = write(
        &dir,
        "jobs.yaml",
        "apiVersion: batch/v1\nkind: JobList\nitems:\n- metadata: {name: js-w-0}\n  status: {succeded: 1}\n",
    );
    let good_jobset = example("jobset-restart-within-budget", "jobset.yaml");
    let args = [
        "jobset",
        "decide",
        "--jobset",
        &good_jobset,
        "--jobs",
        &child_jobs,
        "--now",
        NOW,
    ];
    assert_rejected(
        &run(&args, b""),
        &args,
        "items[0].status.succeded: unknown field",
    );
}

/// Issue 25, defect 11: a quoted integer (`parallelism: "5"`) was read as the
/// number, as proto3 JSON allows, while the API server refuses to put a string
/// into an integer field. Manifests follow the API's JSON: an integer field
/// (int32 or int64, at any depth, `--lenient` or not) is an error naming its
/// path when it holds anything but a number, for `validate` and `simulate` alike;
/// numbers are read as before.
#[test]
fn validate_accepted_a_quoted_integer_the_api_server_rejects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = root()
        .join("examples/simulate/kep-3329-story1/script.yaml")
        .display()
        .to_string();
    let rejected: Vec<(String, &str)> = vec![
        (
            changed_job(|j| j["spec"]["parallelism"] = serde_json::json!("5")),
            "spec.parallelism: expected an integer, found the string \"5\"",
        ),
        (
            // int64: a string in proto3 JSON, a number in the API's.
            changed_job(|j| j["spec"]["activeDeadlineSeconds"] = serde_json::json!("100")),
            "spec.activeDeadlineSeconds: expected an integer, found the string \"100\"",
        ),
        (
            changed_job(|j| {
                j["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] =
                    serde_json::json!([42, "1"]);
            }),
            "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: expected an integer, found the string \"1\"",
        ),
        (
            changed_job(|j| {
                j["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] =
                    serde_json::json!("30");
            }),
            "spec.template.spec.terminationGracePeriodSeconds: expected an integer, found the string \"30\"",
        ),
        (
            changed_job(|j| j["spec"]["backoffLimit"] = serde_json::json!(true)),
            "spec.backoffLimit: expected an integer, found true",
        ),
    ];
    for (i, (text, want)) in rejected.iter().enumerate() {
        let job = write(&dir, &format!("job-{i}.json"), text);
        for args in [
            vec!["validate", &job],
            vec!["validate", "--lenient", &job],
            vec!["simulate", "--job", &job, "--script", &script],
        ] {
            assert_rejected(&run(&args, b""), &args, want);
        }
    }
    // As the issue wrote it: YAML, the value quoted.
    let yaml = write(
        &dir,
        "job.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec:\n  parallelism: \"5\"\n  template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}\n",
    );
    for args in [
        vec!["validate", &yaml],
        vec!["simulate", "--job", &yaml, "--script", &script],
    ] {
        assert_rejected(
            &run(&args, b""),
            &args,
            "spec.parallelism: expected an integer, found the string \"5\"",
        );
    }
    // Numbers, int32 and int64, top-level and nested, are read as before.
    let numbers = write(
        &dir,
        "numbers.json",
        &changed_job(|j| {
            j["spec"]["parallelism"] = serde_json::json!(5);
            j["spec"]["activeDeadlineSeconds"] = serde_json::json!(100);
            j["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = serde_json::json!(30);
            j["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] =
                serde_json::json!([1, 42]);
        }),
    );
    for args in [
        vec!["validate", &numbers],
        vec!["simulate", "--job", &numbers, "--script", &script],
    ] {
        let out = run(&args, b"");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
}

/// The `--state` file is the contract's JSON, checked against the contract's
/// own descriptors: a typo in a saved response is an error naming its path.
#[test]
fn a_typo_in_the_state_file_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = example("kep-3329-failjob-exit-code-42", "job.json");
    let state = write(
        &dir,
        "state.json",
        r#"{"state":{"backoff":{"failuresAfterLastSucess":2}}}"#,
    );
    let args = ["decide", "--job", &job, "--now", NOW, "--state", &state];
    assert_rejected(
        &run(&args, b""),
        &args,
        "state.backoff.failuresAfterLastSucess: unknown field",
    );
    let out = run(&[&args[..], &["--lenient"]].concat(), b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown field, ignored"),
        "{}",
        stderr(&out)
    );
}

/// `--lenient` reads on: each unknown field is a warning on stderr, and the
/// decision is the one without it.
#[test]
fn lenient_warns_and_decides_without_the_unknown_fields() {
    let dir = tempfile::tempdir().expect("tempdir");
    let job = write(
        &dir,
        "job.json",
        &changed_job(|j| {
            let spec = j["spec"].as_object_mut().unwrap();
            spec.remove("backoffLimit");
            spec.insert("backofLimit".into(), serde_json::json!(0));
        }),
    );
    let without = write(
        &dir,
        "job-without.json",
        &changed_job(|j| {
            j["spec"].as_object_mut().unwrap().remove("backoffLimit");
        }),
    );
    let pods = example("kep-3329-failjob-exit-code-42", "pods.json");
    let decide = |job: &str, extra: &[&str]| {
        let mut args = vec![
            "decide", "--job", job, "--pods", &pods, "--now", NOW, "-o", "json",
        ];
        args.extend_from_slice(extra);
        run(&args, b"")
    };
    let lenient = decide(&job, &["--lenient"]);
    assert_eq!(lenient.status.code(), Some(0), "{}", stderr(&lenient));
    assert!(
        stderr(&lenient).contains("warning: ")
            && stderr(&lenient).contains("spec.backofLimit: unknown field, ignored"),
        "{}",
        stderr(&lenient)
    );
    let plain = decide(&without, &[]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert!(stderr(&plain).is_empty(), "{}", stderr(&plain));
    assert_eq!(stdout(&lenient), stdout(&plain));
    let strict = decide(&job, &[]);
    assert_eq!(strict.status.code(), Some(2));
    for args in [
        vec!["validate", "--lenient", &job],
        vec!["request", "--lenient", "--job", &job],
    ] {
        let out = run(&args, b"");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("spec.backofLimit: unknown field, ignored"));
    }
}

/// A 20,000-pod file with a typo in every pod: the error lists the first
/// ones and counts the rest, in a few kilobytes.
#[test]
fn a_huge_file_with_a_typo_in_every_pod_gets_a_short_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pod = r#"{"metadata":{"name":"p","uid":"u"},"spec":{"containers":[{"name":"c","imagePullPolicyy":"Always"}]}}"#;
    let pods = write(
        &dir,
        "pods.json",
        &format!(
            r#"{{"kind":"PodList","items":[{}]}}"#,
            (0..20_000)
                .map(|i| pod.replace(r#""u""#, &format!(r#""u{i}""#)))
                .collect::<Vec<_>>()
                .join(",")
        ),
    );
    let job = example("kep-3329-failjob-exit-code-42", "job.json");
    let args = ["decide", "--job", &job, "--pods", &pods, "--now", NOW];
    let out = run(&args, b"");
    assert_rejected(&out, &args, "20000 unknown fields");
    let err = stderr(&out);
    assert!(err.len() < 4096, "{} bytes", err.len());
    assert!(err.contains("items[0].spec.containers[0].imagePullPolicyy: unknown field"));
    assert!(err.contains("... and 19980 more"), "{err}");
    let lenient = run(&[&args[..], &["--lenient", "-o", "json"]].concat(), b"");
    assert_eq!(lenient.status.code(), Some(0), "{}", stderr(&lenient));
    assert!(
        stderr(&lenient).len() < 4096,
        "{} bytes",
        stderr(&lenient).len()
    );
}

/// A Job as written for `kubectl apply` (no uid, namespace, selector or
/// labels) validates, decides and makes a request, with a note on stderr; the
/// request decides as the CLI does, and pods without the Job's labels or
/// owner are not its pods.
#[test]
fn a_hand_written_manifest_validates_decides_and_requests() {
    let job = example("hand-written-job", "job.yaml");
    let uid = job_decider::manifest::derived_uid("default", "train");
    let noted = |out: &Output| {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        let err = stderr(out);
        assert!(err.contains("has no metadata.uid"), "{err}");
        assert!(err.contains(&format!("metadata.uid: {uid}")), "{err}");
        assert!(err.contains("metadata.namespace: default"), "{err}");
    };
    let out = run(&["validate", &job], b"");
    noted(&out);
    assert!(stdout(&out).ends_with(": valid\n"), "{}", stdout(&out));

    let out = run(&["decide", "--job", &job, "--now", NOW, "-o", "json"], b"");
    noted(&out);
    let decided: pb::DecideJobResponse = serde_json::from_slice(&out.stdout).expect("response");
    let created: Vec<&pb::PodCreation> = decided
        .actions
        .iter()
        .filter_map(|a| match &a.kind {
            Some(pb::action::Kind::CreatePods(c)) => Some(c.pods.iter()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(created.len(), 2, "parallelism 2");
    for pod in &created {
        let owner = pod.owner_reference.as_ref().expect("owner");
        assert_eq!(owner.uid, uid);
    }

    let out = run(&["request", "--job", &job, "--now", NOW], b"");
    noted(&out);
    let request: pb::DecideJobRequest = serde_json::from_slice(&out.stdout).expect("request");
    let printed = request.job.clone().expect("job");
    let meta = printed.metadata.expect("metadata");
    assert_eq!(
        (meta.uid.as_str(), meta.namespace.as_str()),
        (uid.as_str(), "default")
    );
    let selector = printed.spec.and_then(|s| s.selector).expect("selector");
    assert_eq!(
        selector
            .match_labels
            .get("batch.kubernetes.io/controller-uid"),
        Some(&uid)
    );
    assert_eq!(api::decide(request).expect("decides").response(), decided);

    // A pod that is not the Job's (no owner, no labels) changes nothing.
    let dir = tempfile::tempdir().expect("tempdir");
    let stranger = write(
        &dir,
        "pods.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: train-0-abcde, namespace: default, uid: p1}\nstatus: {phase: Failed}\n",
    );
    let out = run(
        &[
            "decide", "--job", &job, "--pods", &stranger, "--now", NOW, "-o", "json",
        ],
        b"",
    );
    noted(&out);
    assert!(
        stderr(&out).contains("others are not its pods"),
        "{}",
        stderr(&out)
    );
    let with_stranger: pb::DecideJobResponse =
        serde_json::from_slice(&out.stdout).expect("response");
    assert_eq!(with_stranger, decided);

    // A stored Job (it has a uid) is taken as it is: no note.
    let stored = example("kep-3329-failjob-exit-code-42", "job.json");
    let out = run(&["validate", &stored], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

/// `-` reads stdin for every file flag of every command; a second `-` is an
/// error naming the second flag.
#[test]
fn every_file_flag_reads_stdin_once() {
    let job = example("kep-3329-failjob-exit-code-42", "job.json");
    let pods = example("kep-3329-failjob-exit-code-42", "pods.json");
    let jobset = example("jobset-restart-within-budget", "jobset.yaml");
    let jobs = example("jobset-restart-within-budget", "jobs.yaml");
    let read = |path: &str| std::fs::read(path).expect("read");
    let same = |from_files: &[&str], from_stdin: &[&str], stdin: &[u8]| {
        let want = run(from_files, b"");
        assert_eq!(
            want.status.code(),
            Some(0),
            "{from_files:?}: {}",
            stderr(&want)
        );
        let got = run(from_stdin, stdin);
        assert_eq!(
            got.status.code(),
            Some(0),
            "{from_stdin:?}: {}",
            stderr(&got)
        );
        assert_eq!(
            stdout(&got),
            stdout(&want).replace(&job, "stdin"),
            "{from_stdin:?}"
        );
    };
    same(&["validate", &job], &["validate", "-"], &read(&job));
    let decide = |j: &str, p: &str| {
        vec![
            "decide".to_string(),
            "--job".into(),
            j.into(),
            "--pods".into(),
            p.into(),
            "--now".into(),
            NOW.into(),
            "-o".into(),
            "json".into(),
        ]
    };
    let strs = |v: &[String]| v.iter().map(String::clone).collect::<Vec<_>>();
    let files = strs(&decide(&job, &pods));
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    for (j, p, stdin) in [
        ("-", pods.as_str(), read(&job)),
        (job.as_str(), "-", read(&pods)),
    ] {
        let args = decide(j, p);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        same(&files, &args, &stdin);
    }
    let js_files = [
        "jobset", "decide", "--jobset", &jobset, "--jobs", &jobs, "--now", NOW,
    ];
    same(
        &js_files,
        &[
            "jobset", "decide", "--jobset", "-", "--jobs", &jobs, "--now", NOW,
        ],
        &read(&jobset),
    );
    same(
        &js_files,
        &[
            "jobset", "decide", "--jobset", &jobset, "--jobs", "-", "--now", NOW,
        ],
        &read(&jobs),
    );
    let out = run(&["jobset", "validate", "-"], &read(&jobset));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "stdin: valid\n");
    // The state, from a saved response on stdin.
    let first = run(&files, b"");
    let out = run(
        &[
            "request", "--job", &job, "--pods", &pods, "--now", NOW, "--state", "-",
        ],
        &first.stdout,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed: pb::DecideJobRequest = serde_json::from_slice(&out.stdout).expect("request");
    let saved: pb::DecideJobResponse = serde_json::from_slice(&first.stdout).expect("response");
    assert_eq!(printed.state, saved.state);

    for (args, second) in [
        (vec!["decide", "--job", "-", "--pods", "-"], "--pods"),
        (
            vec!["request", "--job", &job, "--pods", "-", "--state", "-"],
            "--state",
        ),
        (
            vec!["jobset", "decide", "--jobset", "-", "--jobs", "-"],
            "--jobs",
        ),
    ] {
        let out = run(&args, &read(&pods));
        assert_rejected(&out, &args, &format!("{second}: - (stdin) is already"));
    }
}

/// The schema is generated from the Kubernetes API version the project
/// follows: the k8s.io/api the conformance harness pins (upstream's own
/// controller) and the JobSet its JobSet harness pins, through the generator's
/// own go.mod. Moving a pin without regenerating fails here.
#[test]
fn the_schema_follows_the_pinned_kubernetes_and_jobset_versions() {
    let pinned = |go_mod: &str, module: &str| -> String {
        let text = std::fs::read_to_string(root().join(go_mod)).expect("go.mod");
        text.lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let first = words.next()?;
                let (name, version) = if first == "require" {
                    (words.next()?, words.next()?)
                } else {
                    (first, words.next()?)
                };
                (name == module).then(|| version.to_string())
            })
            .next()
            .unwrap_or_else(|| panic!("{go_mod} does not require {module}"))
    };
    let schema = job_decider::schema::schema().expect("schema");
    let generated = |module: &str| schema.modules().get(module).cloned().expect("module");
    assert_eq!(
        generated("k8s.io/api"),
        pinned("conformance/go.mod", "k8s.io/api")
    );
    assert_eq!(
        generated("k8s.io/api"),
        pinned("tools/schemagen/go.mod", "k8s.io/api")
    );
    assert_eq!(
        generated("sigs.k8s.io/jobset"),
        pinned("conformance/jobset/go.mod", "sigs.k8s.io/jobset")
    );
    assert_eq!(
        generated("sigs.k8s.io/jobset"),
        pinned("tools/schemagen/go.mod", "sigs.k8s.io/jobset")
    );
}
