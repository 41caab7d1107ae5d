use super::*;

fn unknown(api_version: &str, kind: &str, doc: &str) -> Vec<String> {
    let schema = schema().expect("the embedded schema reads");
    let kind = schema
        .kind(api_version, kind)
        .expect("a kind of the schema");
    let value: Value = serde_yaml::from_str(doc).expect("YAML");
    let mut out = UnknownFields::default();
    schema.check(kind, &value, "", &[], &mut out);
    out.listed().to_vec()
}

#[test]
fn the_embedded_schema_reads_and_names_its_sources() {
    let schema = schema().expect("reads");
    assert_eq!(
        schema.modules().get("k8s.io/api").map(String::as_str),
        Some("v0.37.2")
    );
    for (v, k) in [
        ("batch/v1", "Job"),
        ("batch/v1", "JobList"),
        ("v1", "Pod"),
        ("v1", "PodList"),
        ("v1", "List"),
        ("jobset.x-k8s.io/v1alpha2", "JobSet"),
    ] {
        assert!(schema.kind(v, k).is_some(), "{v} {k}");
    }
    assert!(schema.kind("batch/v2", "Job").is_none());
    assert_eq!(schema.api_versions("Job").collect::<Vec<_>>(), ["batch/v1"]);
}

#[test]
fn unknown_fields_are_found_at_every_depth_and_real_ones_pass() {
    let job = "
apiVersion: batch/v1
kind: Job
metadata:
  name: j
  labels: {any/key: v}
  managedFields: [{manager: kubectl, fieldsV1: {f:spec: {f:anything: {}}}}]
  creationTimestamp: '2025-01-01T00:00:00Z'
spec:
  backofLimit: 3
  podFailurePolicy:
    rules: [{action: Ignore, onPodCondition: [{type: DisruptionTarget}]}]
  template:
    metadata: {annotations: {a: b}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers:
      - name: c
        args: [--x]
        resources: {limits: {cpu: 500m, nvidia.com/gpu: 1}}
        ports: [{containerPort: 80}]
        imagePullPolicyy: Always
";
    assert_eq!(
        unknown("batch/v1", "Job", job),
        [
            "spec.backofLimit",
            "spec.podFailurePolicy.rules[0].onPodCondition",
            "spec.template.spec.containers[0].imagePullPolicyy",
        ]
    );
    let pod = "
status:
  containerStatuses:
  - name: c
    state: {terminated: {exitcode: 1, exitCode: 1}}
    lastState: {}
";
    assert_eq!(
        unknown("v1", "Pod", pod),
        ["status.containerStatuses[0].state.terminated.exitcode"]
    );
}

#[test]
fn list_items_are_left_to_their_own_kind() {
    let schema = schema().expect("reads");
    let kind = schema.kind("v1", "PodList").expect("PodList");
    let value: Value = serde_json::json!({
        "kind": "PodList", "metadata": {"resourceVersion": "1", "continu": "x"},
        "items": [{"bogus": 1}]
    });
    let mut out = UnknownFields::default();
    schema.check(kind, &value, "", &["items"], &mut out);
    assert_eq!(out.listed(), ["metadata.continu"]);
}

#[test]
fn the_list_is_capped_and_the_rest_counted() {
    let schema = schema().expect("reads");
    let kind = schema.kind("v1", "Pod").expect("Pod");
    let value: Value = serde_json::json!({"metadata": {"name": "p", "nmae": 1}});
    let mut out = UnknownFields::default();
    for _ in 0..1000 {
        schema.check(kind, &value, "x", &[], &mut out);
    }
    assert_eq!(out.total(), 1000);
    assert_eq!(out.listed().len(), MAX_LISTED_UNKNOWN_FIELDS);
    assert_eq!(out.more(), 1000 - MAX_LISTED_UNKNOWN_FIELDS);
    assert_eq!(out.listed()[0], "x.metadata.nmae");
    let long = "k".repeat(10_000);
    let value: Value = serde_json::json!({ long: 1 });
    let mut out = UnknownFields::default();
    schema.check(kind, &value, "", &[], &mut out);
    assert!(out.listed()[0].len() < 400, "{}", out.listed()[0].len());
}

/// The first integer field holding something else, by path, for a Job as YAML.
fn mistyped(doc: &str) -> Option<(String, String)> {
    let schema = schema().expect("reads");
    let kind = schema.kind("batch/v1", "Job").expect("Job");
    let value: Value = serde_yaml::from_str(doc).expect("YAML");
    let mut out = UnknownFields::default();
    schema.check(kind, &value, "", &[], &mut out);
    out.mistyped().map(|(p, d)| (p.to_string(), d.to_string()))
}

/// Integer fields take numbers (int32 and int64, at any depth) and null, and
/// nothing else: not a quoted number, which proto3 JSON would read and the
/// API server refuses; the first such field is named, unknown fields aside.
#[test]
fn an_integer_field_holding_a_string_is_mistyped_by_path() {
    assert_eq!(
        mistyped(
            "spec: {parallelism: 5, activeDeadlineSeconds: 100, completions: null,
  podFailurePolicy: {rules: [{action: Ignore, onExitCodes: {operator: In, values: [1, 2]}}]},
  template: {spec: {terminationGracePeriodSeconds: 30}}}
metadata: {generation: 3, name: '5'}"
        ),
        None
    );
    for (doc, path, found) in [
        (
            "spec: {parallelism: '5'}",
            "spec.parallelism",
            "the string \"5\"",
        ),
        (
            "metadata: {generation: \"1\"}",
            "metadata.generation",
            "the string \"1\"",
        ),
        (
            "spec: {podFailurePolicy: {rules: [{onExitCodes: {values: [1, '2']}}]}}",
            "spec.podFailurePolicy.rules[0].onExitCodes.values[1]",
            "the string \"2\"",
        ),
        ("spec: {backoffLimit: true}", "spec.backoffLimit", "true"),
        ("spec: {completions: [1]}", "spec.completions", "a list"),
        (
            "spec: {backofLimit: '1', parallelism: {a: 1}}",
            "spec.parallelism",
            "an object",
        ),
    ] {
        let (got_path, detail) = mistyped(doc).unwrap_or_else(|| panic!("{doc}"));
        assert_eq!(got_path, path, "{doc}");
        assert!(
            detail.starts_with(&format!("expected an integer, found {found} ")),
            "{doc}: {detail}"
        );
    }
}
