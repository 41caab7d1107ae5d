use super::*;

fn now() -> pbjson_types::Timestamp {
    pbjson_types::Timestamp {
        seconds: 1_750_000_000,
        nanos: 0,
    }
}

#[test]
fn derived_uids_are_stable_version_8_uuids() {
    let uid = derived_uid("default", "pi");
    assert_eq!(uid, derived_uid("default", "pi"));
    assert_ne!(uid, derived_uid("default", "pj"));
    assert_ne!(uid, derived_uid("other", "pi"));
    assert_eq!(uid.len(), 36);
    let parts: Vec<&str> = uid.split('-').collect();
    assert_eq!(
        parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
        [8, 4, 4, 4, 12]
    );
    assert!(parts[2].starts_with('8'), "{uid}");
    assert!("89ab".contains(&parts[3][..1]), "{uid}");
    // FNV-1a's published test value for the empty input is its offset basis.
    assert_eq!(fnv1a_128(b""), 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d);
    assert_eq!(fnv1a_128(b"a"), 0xd228_cb69_6f1a_8caf_7891_2b70_4e4a_8964);
}

#[test]
fn a_job_without_uid_is_created_as_the_api_server_would() {
    let mut job = pb::Job {
        metadata: Some(pb::ObjectMeta {
            name: "pi".into(),
            ..Default::default()
        }),
        spec: Some(pb::JobSpec {
            template: Some(pb::PodTemplateSpec {
                metadata: Some(pb::ObjectMeta {
                    labels: [("app".to_string(), "pi".to_string())].into(),
                    ..Default::default()
                }),
                spec: None,
            }),
            ..Default::default()
        }),
        status: Some(pb::JobStatus {
            active: 3,
            ..Default::default()
        }),
        ..Default::default()
    };
    let filled = as_created(&mut job, &now()).expect("filled in");
    let meta = job.metadata.as_ref().expect("metadata");
    let uid = derived_uid("default", "pi");
    assert_eq!(meta.uid, uid);
    assert_eq!(meta.namespace, "default");
    assert_eq!(meta.creation_timestamp, Some(now()));
    assert_eq!(meta.generation, 1);
    assert_eq!(job.status, None);
    let spec = job.spec.as_ref().expect("spec");
    let labels = &spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .expect("template metadata")
        .labels;
    for (key, want) in [
        ("app", "pi"),
        (JOB_NAME_LABEL, "pi"),
        (LEGACY_JOB_NAME_LABEL, "pi"),
        (CONTROLLER_UID_LABEL, uid.as_str()),
        (LEGACY_CONTROLLER_UID_LABEL, uid.as_str()),
    ] {
        assert_eq!(labels.get(key).map(String::as_str), Some(want), "{key}");
    }
    assert_eq!(&meta.labels, labels);
    let selector = spec.selector.as_ref().expect("selector");
    assert_eq!(selector.match_labels.get(CONTROLLER_UID_LABEL), Some(&uid));
    let text = filled.join("\n");
    for want in [
        "metadata.uid",
        "metadata.namespace: default",
        "status: dropped",
        "backoffLimit 6",
        "podReplacementPolicy TerminatingOrFailed",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
}

#[test]
fn a_stored_job_is_taken_as_it_is() {
    let mut job = pb::Job {
        metadata: Some(pb::ObjectMeta {
            name: "pi".into(),
            uid: "u1".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let before = job.clone();
    assert_eq!(as_created(&mut job, &now()), None);
    assert_eq!(job, before);
}

#[test]
fn a_manual_selector_and_written_labels_are_kept() {
    let mut job = pb::Job {
        metadata: Some(pb::ObjectMeta {
            generate_name: "x".repeat(70),
            namespace: "ns".into(),
            ..Default::default()
        }),
        spec: Some(pb::JobSpec {
            manual_selector: Some(true),
            backoff_limit_per_index: Some(1),
            ..Default::default()
        }),
        ..Default::default()
    };
    let filled = as_created(&mut job, &now()).expect("filled in");
    let meta = job.metadata.as_ref().expect("metadata");
    assert!(meta.labels.is_empty(), "{:?}", meta.labels);
    assert_eq!(meta.name.len(), 63, "{}", meta.name);
    assert_eq!(meta.name, generated_name("ns", &"x".repeat(70)));
    assert_eq!(meta.namespace, "ns");
    let spec = job.spec.as_ref().expect("spec");
    assert_eq!(spec.selector, None);
    assert_eq!(spec.template, None);
    let text = filled.join("\n");
    assert!(text.contains("backoffLimit 2147483647"), "{text}");
    assert!(!text.contains("manualSelector"), "{text}");
}
