use super::*;

#[test]
fn pods_from_every_shape() {
    let list = r#"{"kind":"PodList","items":[{"metadata":{"name":"a","uid":"1"}},{"metadata":{"name":"b"}}]}"#;
    assert_eq!(parse_pods(list, "pods").map(|p| p.len()).ok(), Some(2));
    let docs = "kind: Pod\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: b}\n";
    let pods = parse_pods(docs, "pods").expect("parsed");
    let names: Vec<_> = pods
        .iter()
        .map(|p| p.metadata.as_ref().map(|m| m.name.as_str()))
        .collect();
    assert_eq!(names, [Some("a"), Some("b")]);
    assert_eq!(parse_pods("", "pods").map(|p| p.len()).ok(), Some(0));
    // `jq .items` of a PodList: a bare array.
    let array = r#"[{"kind":"Pod","metadata":{"name":"a"}},{"metadata":{"name":"b"}}]"#;
    let pods = parse_pods(array, "pods").expect("an array");
    let names: Vec<_> = pods
        .iter()
        .map(|p| p.metadata.as_ref().map(|m| m.name.as_str()))
        .collect();
    assert_eq!(names, [Some("a"), Some("b")]);
    let err = parse_pods(r#"[{}, {"metadata":{"name":3}}]"#, "pods").expect_err("bad name");
    assert!(err.to_string().contains("pods: [1].metadata.name"), "{err}");
    let err = parse_pods(r#"[{"kind":"Job"}]"#, "pods").expect_err("a Job");
    assert!(err.to_string().contains("[0].kind: expected Pod"), "{err}");
}

#[test]
fn field_errors_name_the_path() {
    let list = r#"{"kind":"PodList","items":[{},{"status":{"containerStatuses":[{"restartCount":"many"}]}}]}"#;
    let err = parse_pods(list, "pods.json").expect_err("bad restartCount");
    let DocumentError::Field { field, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(field, "items[1].status.containerStatuses[0].restartCount");
    let err = parse_job("kind: Service\n", "job.yaml").expect_err("wrong kind");
    assert!(
        err.to_string()
            .contains("job.yaml: kind: expected Job, found Service"),
        "{err}"
    );
    let err =
        parse_pods("kind: Pod\n---\nkind: Pod\nmetadata: {name: 3}\n", "p").expect_err("bad name");
    assert!(
        err.to_string().contains("[document 1].metadata.name"),
        "{err}"
    );
}

#[test]
fn wrong_api_version_or_kind_is_a_field_error() {
    let cases = [
        (
            "apiVersion: batch/v2\nkind: Job\n",
            "apiVersion",
            "expected batch/v1 for kind Job, found batch/v2",
        ),
        (
            "apiVersion: batch/v1\nkind: Jobs\n",
            "kind",
            "expected Job, found Jobs",
        ),
        ("apiVersion: v1\nkind: Job\n", "apiVersion", "found v1"),
        ("apiVersion: 1\n", "apiVersion", "found 1"),
    ];
    for (text, want_field, want) in cases {
        let err = parse_job(text, "job.yaml").expect_err(text);
        let DocumentError::Field { field, detail, .. } = &err else {
            panic!("{text}: {err}");
        };
        assert_eq!(field, want_field, "{text}");
        assert!(detail.contains(want), "{text}: {detail}");
    }
    // Left out, they are the kind the reader expects.
    assert!(parse_job("metadata: {name: j}\n", "job.yaml").is_ok());
    let err = parse_pods(
        "apiVersion: v1\nkind: PodList\nitems:\n- apiVersion: apps/v1\n  kind: Pod\n",
        "pods.yaml",
    )
    .expect_err("apps/v1 Pod");
    assert!(
        err.to_string()
            .contains("pods.yaml: items[0].apiVersion: expected v1 for kind Pod, found apps/v1"),
        "{err}"
    );
    let err = parse_jobs("apiVersion: v2\nkind: List\n", "jobs").expect_err("v2 List");
    assert!(
        err.to_string().contains("jobs: apiVersion: expected v1"),
        "{err}"
    );
    let err = parse_jobset("apiVersion: jobset.x-k8s.io/v1\nkind: JobSet\n", "js")
        .expect_err("JobSet v1");
    assert!(
        err.to_string()
            .contains("expected jobset.x-k8s.io/v1alpha2"),
        "{err}"
    );
}

#[test]
fn unknown_fields_are_rejected_or_warned_with_their_paths() {
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {backofLimit: 0}\n";
    let err = parse_job(job, "job.yaml").expect_err("a typo");
    assert!(
        err.to_string()
            .starts_with("job.yaml: spec.backofLimit: unknown field"),
        "{err}"
    );
    let read = parse_job_with(job, "job.yaml", UnknownFields::Warn).expect("lenient");
    assert_eq!(
        read.warnings,
        ["job.yaml: spec.backofLimit: unknown field, ignored"]
    );
    assert_eq!(read.value.spec.and_then(|s| s.backoff_limit), None);
    // Several documents, a list and its envelope: every path says where.
    let pods = "kind: Pod\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nmetadata: {resourceVersoin: '1'}\nitems:\n- kind: Pod\n  spec: {nodeName: n, nodname: m}\n";
    let err = parse_pods(pods, "pods.yaml").expect_err("typos");
    let DocumentError::UnknownFields { fields, total, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(
        fields,
        &[
            "[document 1].metadata.resourceVersoin",
            "[document 1].items[0].spec.nodname"
        ]
    );
    assert_eq!(*total, 2);
    // A JobSet's Job template is a batch/v1 JobSpec.
    let jobset = "kind: JobSet\nspec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec: {backoffLimit: 1, parallelizm: 2}\n";
    let err = parse_jobset(jobset, "js.yaml").expect_err("typo");
    assert!(
        err.to_string()
            .contains("spec.replicatedJobs[0].template.spec.parallelizm: unknown field"),
        "{err}"
    );
}

#[test]
fn a_huge_file_gets_a_short_error() {
    let pod = r#"{"metadata":{"name":"p","uid":"u"},"status":{"phase":"Running","phaze":"x"}}"#;
    let items = vec![pod; 20_000].join(",");
    let text = format!(r#"{{"kind":"PodList","items":[{items}]}}"#);
    let err = parse_pods(&text, "pods.json").expect_err("typos");
    let message = err.to_string();
    assert!(message.len() < 3_000, "{} bytes", message.len());
    assert!(message.contains("20000 unknown fields"), "{message}");
    assert!(
        message.contains("items[19].status.phaze: unknown field"),
        "{message}"
    );
    assert!(!message.contains("items[20]."), "{message}");
    assert!(message.contains("... and 19980 more"), "{message}");
    let read = parse_pods_with(&text, "pods.json", UnknownFields::Warn).expect("lenient");
    assert_eq!(read.value.len(), 20_000);
    assert_eq!(read.warnings.len(), MAX_LISTED_UNKNOWN_FIELDS + 1);
    assert!(read.warnings[MAX_LISTED_UNKNOWN_FIELDS].contains("19980 more"));
}

/// The JSON list read item by item gives what reading it whole gives:
/// the same objects, warnings and errors, word for word.
#[test]
fn streamed_json_lists_read_as_whole_ones() {
    let cases = [
        // kubectl's order: items before kind.
        r#"{"apiVersion":"v1","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}],"kind":"List","metadata":{"resourceVersion":""}}"#,
        r#"{"kind":"PodList","items":null}"#,
        r#"{"kind":"PodList"}"#,
        r#"{"kind":"PodList","items":{"a":1}}"#,
        r#"{"kind":"PodList","items":3}"#,
        r#"{"kind":"PodList","apiVersion":"v2","items":[{"kind":"Job"}]}"#,
        r#"{"kind":"PodList","metadata":{"resourceVersoin":"1"},"items":[{"spec":{"nodname":"n"}}]}"#,
        // A conversion error waits for unknown fields and kind errors after it.
        r#"{"kind":"PodList","items":[{"metadata":{"name":3}},{"status":{"phaze":"x"}}]}"#,
        r#"{"kind":"PodList","items":[{"metadata":{"name":3}},{"kind":"Job"}]}"#,
        r#"{"kind":"PodList","items":[{"metadata":{"name":3}},{"metadata":{"name":4}}]}"#,
        r#"[{"metadata":{"name":"a"},"status":{"phaze":"x"}},{"kind":"Pod","apiVersion":"v2"}]"#,
        r#"[{"metadata":{"name":"a"}}, 7]"#,
        r#"[]"#,
        // A syntax error after a bad item: the syntax error first.
        r#"{"kind":"PodList","items":[{"kind":"Job"},{"metadata":}]}"#,
        r#"[{"kind":"Job"},{"#,
        r#"[{"kind":"Job"},1e400]"#,
        r#"{"kind":"PodList","items":[{"metadata":{"name":3}},{"status":{"phase":1e400}}]}"#,
        r#"{"kind":"PodList","items":[]} trailing"#,
        // Not a list, or items given twice: read whole.
        r#"{"kind":"Pod","metadata":{"name":"a"}}"#,
        r#"{"items":[{"metadata":{"name":"a"}}]}"#,
        r#"{"kind":"PodList","items":[{"metadata":{"name":"a"}}],"items":[]}"#,
    ];
    let text = |read: Result<Parsed<Vec<pb::Pod>>, DocumentError>| match read {
        Ok(read) => format!("{:?} {:?}", read.value, read.warnings),
        Err(err) => format!("error: {err}"),
    };
    for (i, case) in cases.into_iter().enumerate() {
        for unknown in [UnknownFields::Reject, UnknownFields::Warn] {
            // All but the last three go through the item-by-item reader.
            let streamed = !matches!(
                stream_json_list::<pb::Pod>(case, "pods.json", "Pod", unknown),
                Ok(None)
            );
            assert_eq!(streamed, i < cases.len() - 3, "{case}");
            assert_eq!(
                text(parse_objects(case, "pods.json", "Pod", unknown)),
                text(parse_objects_whole(case, "pods.json", "Pod", unknown)),
                "{case} ({unknown:?})"
            );
        }
    }
}

#[test]
fn keys_given_twice_and_numbers_not_finite_are_refused_by_path() {
    let cases = [
        (
            "metadata: {name: a, name: b}\n",
            "job.yaml: metadata: the key \"name\" is given twice",
        ),
        (
            "{\"spec\": {\"parallelism\": 1, \"parallelism\": 2}}",
            "job.yaml: spec: the key \"parallelism\" is given twice",
        ),
        (
            "kind: Job\nkind: Job\n",
            "job.yaml: the key \"kind\" is given twice",
        ),
        (
            "spec: {template: {spec: {containers: [{name: c}, {name: d, name: e}]}}}\n",
            "job.yaml: spec.template.spec.containers[1]: the key \"name\"",
        ),
        (
            "spec: {completions: .nan}\n",
            "job.yaml: spec.completions: NaN is not a number",
        ),
        (
            "spec: {parallelism: -.inf}\n",
            "job.yaml: spec.parallelism: -inf is not a number",
        ),
    ];
    for (text, want) in cases {
        let err = parse_job(text, "job.yaml").expect_err(text);
        assert!(err.to_string().starts_with(want), "{text}: {err}");
    }
    let err = parse_pods(
        "kind: Pod\n---\nkind: Pod\nmetadata: {labels: {a: '1', a: '2'}}\n",
        "p",
    )
    .expect_err("twice");
    assert!(
        err.to_string()
            .contains("p: [document 1].metadata.labels: the key \"a\""),
        "{err}"
    );
    // Streamed item by item, the same words as read whole.
    let list = r#"{"kind":"PodList","items":[{},{"metadata":{"name":"a","name":"b"}}]}"#;
    let err = parse_pods(list, "pods.json").expect_err("twice");
    assert!(
        err.to_string()
            .starts_with("pods.json: items[1].metadata: the key \"name\""),
        "{err}"
    );
    let list = r#"{"kind":"PodList","metadata":{},"metadata":{},"items":[]}"#;
    let err = parse_pods(list, "pods.json").expect_err("twice");
    assert!(
        err.to_string()
            .starts_with("pods.json: the key \"metadata\""),
        "{err}"
    );
}

#[test]
fn times_and_state() {
    let t = parse_time("2024-05-01T10:00:00.5Z", "--now").expect("time");
    assert_eq!((t.seconds, t.nanos), (1_714_557_600, 500_000_000));
    assert!(parse_time("yesterday", "--now").is_err());
    let state = parse_state(
        r#"{"actions":[],"state":{"backoff":{"failuresAfterLastSuccess":2}}}"#,
        "state.json",
    )
    .expect("state");
    assert_eq!(
        state.backoff.map(|b| b.failures_after_last_success),
        Some(2)
    );
    let state = parse_state(
        "backoff: {failures_after_last_success: 3, lastFailureTime: '2024-05-01T10:00:00Z'}\n",
        "state.yaml",
    )
    .expect("proto names are proto3 JSON too");
    assert_eq!(
        state.backoff.map(|b| b.failures_after_last_success),
        Some(3)
    );
    let err = parse_state(r#"{"backoff":{"failuresAfterLastSucess":2}}"#, "state.json")
        .expect_err("a typo");
    assert!(
        err.to_string()
            .contains("state.json: backoff.failuresAfterLastSucess: unknown field"),
        "{err}"
    );
    let response = r#"{"actions":[{"createPods":{"pods":[{"generateName":"a-","labels":{"x":"y"}}]}},{"bogus":{}}],"requeueAfter":"7s","state":{}}"#;
    let err = parse_state(response, "response.json").expect_err("a typo");
    assert!(
        err.to_string()
            .contains("response.json: actions[1].bogus: unknown field"),
        "{err}"
    );
    let read = parse_state_with(response, "response.json", UnknownFields::Warn).expect("lenient");
    assert_eq!(read.warnings.len(), 1);
}
