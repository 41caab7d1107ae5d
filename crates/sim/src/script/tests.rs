use super::*;

fn err(text: &str) -> ScriptError {
    Script::from_yaml(text)
        .expect_err(text)
        .0
        .into_iter()
        .next()
        .expect("an error")
}

#[test]
fn reads_every_feature() {
    let s = Script::from_yaml(
        "horizon: 2h\nseed: 7\nmaxSyncs: 50\ndefaults: {runTime: 5m, startDelay: 2s, stopTime: 10s}\n\
         attempts:\n- {index: 3, attempt: 1-2, exitCode: 137, reason: OOMKilled}\n\
         - {attempt: 1, exitCode: 1, runTime: 30s}\n- {percent: 10, exitCodes: [1, 137]}\n\
         events:\n- {at: 5m, drain: {index: 2}}\n- {at: 6m, deletePod: {pod: [4]}}\n\
         - {at: 20m, suspend: true}\n- {at: 25m, resume: true}\n- {at: 26m, parallelism: 2}\n",
    )
    .expect("valid");
    assert_eq!(s.horizon(), Span::secs(7200));
    assert_eq!(s.seed, 7);
    assert_eq!(s.attempts[0].attempt, Some(Numbers(BTreeSet::from([1, 2]))));
    assert_eq!(s.attempts[2].exit_codes, Some(vec![1, 137]));
    let actions: Vec<_> = s
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| e.action(i))
        .collect();
    assert_eq!(actions[2], Ok(EventAction::Suspend(true)));
    assert_eq!(actions[3], Ok(EventAction::Suspend(false)));
    assert_eq!(actions[4], Ok(EventAction::Parallelism(2)));
    assert!(matches!(&actions[0], Ok(EventAction::Drain(t)) if t.matches(Some(2), 9)));
}

#[test]
fn errors_name_the_field() {
    for (text, path) in [
        (
            "attempts:\n- {exitCode: 1}\n- {exitCode: one}\n",
            "attempts[1].exitCode",
        ),
        ("attempts:\n- {exitcode: 1}\n", "attempts[0].exitcode"),
        (
            "attempts:\n- {percent: 120, exitCode: 1}\n",
            "attempts[0].percent",
        ),
        (
            "attempts:\n- {exitCode: 1, exitCodes: [2]}\n",
            "attempts[0].exitCodes",
        ),
        (
            "attempts:\n- {attempt: 0, exitCode: 1}\n",
            "attempts[0].attempt",
        ),
        (
            "attempts:\n- {index: \"3-1\", exitCode: 1}\n",
            "attempts[0].index",
        ),
        ("events:\n- {at: 5m}\n", "events[0]"),
        (
            "events:\n- {at: 5m, suspend: true, parallelism: 1}\n",
            "events[0]",
        ),
        ("events:\n- {at: soon, suspend: true}\n", "events[0].at"),
        ("events:\n- {at: 5m, drain: {}}\n", "events[0].drain"),
        (
            "events:\n- {at: 5m, suspend: true}\n- {at: 1m, resume: true}\n",
            "events[1].at",
        ),
        ("horizon: 3d\n", "horizon"),
        ("defaults: {runtime: 5m}\n", "defaults.runtime"),
        ("bogus: 1\n", "bogus"),
    ] {
        assert_eq!(err(text).path, path, "{text}");
    }
}

#[test]
fn empty_script_is_all_defaults() {
    let s = Script::from_yaml("").expect("empty is fine");
    assert!(s.attempts.is_empty() && s.events.is_empty());
    assert_eq!(s.horizon(), DEFAULT_HORIZON);
}

/// Issue 25, defect 12: only the first error was reported, and serde's own path was
/// repeated after the field's (`events[0].at: events[0].at: …`).
#[test]
fn only_the_first_script_error_was_reported_with_its_path_twice() {
    let errors = Script::from_yaml(
        "attempts:\n- {percent: 150, exitCode: 1}\n- {exitCode: 300}\n- {exitCodes: [1, 256]}\n\
         defaults: {exitCode: -1}\nmaxSyncs: 0\n",
    )
    .expect_err("five errors");
    let paths: Vec<&str> = errors.0.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "attempts[0].percent",
            "attempts[1].exitCode",
            "attempts[2].exitCodes",
            "defaults.exitCode",
            "maxSyncs"
        ],
        "{errors}"
    );
    let e = err("events:\n- {at: 5 minutes, suspend: true}\n");
    assert_eq!(e.path, "events[0].at");
    assert!(!e.message.contains("events[0]"), "{e}");
    assert_eq!(e.to_string().matches("events[0].at").count(), 1, "{e}");
}

#[test]
fn distributions_read_as_written() {
    let s = Script::from_yaml(
        "defaults: {runTime: {logNormal: {median: 40m, sigma: 0.3}}, startDelay: {uniform: [1s, 5s]}}\n\
         attempts:\n- {index: 1, runTime: {exponential: {mean: 10m}}}\n- {index: 2, runTime: 90}\n\
         events:\n- {at: {uniform: [1h, 5h]}, percent: 30, drain: {index: 1}}\n",
    )
    .expect("valid");
    assert_eq!(
        s.defaults.run_time,
        Some(Dist::LogNormal {
            median: Span::secs(2400),
            sigma: 0.3
        })
    );
    assert_eq!(
        s.defaults.start_delay,
        Some(Dist::Uniform(Span::secs(1), Span::secs(5)))
    );
    assert_eq!(
        s.attempts[0].run_time,
        Some(Dist::Exponential {
            mean: Span::secs(600)
        })
    );
    assert_eq!(s.attempts[1].run_time, Some(Dist::Fixed(Span::secs(90))));
    assert_eq!(
        s.events[0].at,
        Dist::Uniform(Span::secs(3600), Span::secs(18000))
    );
    assert_eq!(s.events[0].percent, Some(30.0));
    assert!(s.has_draws());
    assert!(
        !Script::from_yaml("defaults: {runTime: 5m}\n")
            .expect("valid")
            .has_draws()
    );
}

#[test]
fn bad_distributions_are_errors_naming_the_field_all_at_once() {
    let errors = Script::from_yaml(
        "defaults: {runTime: {uniform: [50m, 30m]}}\n\
         attempts:\n- {runTime: {logNormal: {median: 0s, sigma: -1}}}\n- {startDelay: {exponential: {mean: 0s}}}\n\
         events:\n- {at: 1m, percent: 101, suspend: true}\n",
    )
    .expect_err("invalid")
    .0;
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "attempts[0].runTime.logNormal.median",
            "attempts[0].runTime.logNormal.sigma",
            "attempts[1].startDelay.exponential.mean",
            "defaults.runTime.uniform",
            "events[0].percent",
        ]
    );
    assert!(errors[3].message.contains("backwards"), "{}", errors[3]);
    // Shapes serde reads are errors too, naming the field.
    for (text, path) in [
        ("defaults: {runTime: {gamma: {k: 2}}}\n", "defaults.runTime"),
        (
            "defaults: {runTime: {uniform: [1m]}}\n",
            "defaults.runTime.uniform",
        ),
        (
            "defaults: {runTime: {logNormal: {median: 5m}}}\n",
            "defaults.runTime.logNormal",
        ),
        (
            "attempts:\n- {runTime: {exponential: {mean: 5m, sd: 1m}}}\n",
            "attempts[0].runTime.exponential",
        ),
        (
            "defaults: {runTime: {uniform: [1m, 2m], exponential: {mean: 1m}}}\n",
            "defaults.runTime",
        ),
    ] {
        let e = err(text);
        assert!(e.path.starts_with(path), "{text}: {e:?}");
    }
}

/// The sample mean of `n` draws keyed as attempts are.
fn sample_mean(d: Dist, n: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let total: f64 = (0..n)
        .map(|i| {
            d.sample(dist::unit(&[1, i, 0]), dist::unit(&[1, i, 1]))
                .nanos() as f64
        })
        .sum();
    #[allow(clippy::cast_precision_loss)]
    let mean = total / n as f64;
    mean
}

#[test]
fn each_distribution_draws_around_its_mean() {
    let n = 20_000;
    for d in [
        Dist::Fixed(Span::secs(600)),
        Dist::Uniform(Span::secs(1800), Span::secs(3000)),
        Dist::Exponential {
            mean: Span::secs(600),
        },
        Dist::LogNormal {
            median: Span::secs(2400),
            sigma: 0.3,
        },
    ] {
        let mean = sample_mean(d, n);
        // Within 2% of the analytic mean (well over 3 standard errors for these).
        let want = d.mean_nanos();
        assert!(
            (mean - want).abs() <= want * 0.02,
            "{d}: sample mean {mean}, want {want}"
        );
    }
    // The log-normal's median is its median.
    let d = Dist::LogNormal {
        median: Span::secs(2400),
        sigma: 0.5,
    };
    let below = (0..10_000u64)
        .filter(|&i| d.sample(dist::unit(&[2, i, 0]), dist::unit(&[2, i, 1])) < Span::secs(2400))
        .count();
    assert!(
        (4_700..=5_300).contains(&below),
        "{below} of 10000 below the median"
    );
}

#[test]
fn a_life_draws_its_events_from_its_seed() {
    let s = Script::from_yaml(
        "events:\n- {at: {uniform: [1h, 5h]}, drain: {index: 1}}\n- {at: 2h, percent: 50, suspend: true}\n",
    )
    .expect("valid");
    let lives: Vec<Script> = (1..=400).map(|i| s.life(Script::life_seed(9, i))).collect();
    // The same seed, the same life.
    let again = s.life(Script::life_seed(9, 7));
    assert_eq!(again.events.len(), lives[6].events.len());
    assert_eq!(again.events[0].at, lives[6].events[0].at);
    let with_suspend = lives.iter().filter(|l| l.events.len() == 2).count();
    assert!((160..=240).contains(&with_suspend), "{with_suspend} of 400");
    for l in &lives {
        // Every time is drawn and in range, and the events are in time order.
        assert!(
            l.events
                .iter()
                .all(|e| e.at.fixed().is_some() && e.percent.is_none())
        );
        assert!(
            l.events
                .windows(2)
                .all(|w| w[0].at.nanos() <= w[1].at.nanos())
        );
        let drain = l.events.iter().find(|e| e.drain.is_some()).expect("drain");
        assert!((3600..=18_000).contains(&(drain.at.nanos() / 1_000_000_000)));
    }
    assert!(lives.iter().any(|l| l.events[0].suspend.is_some()));
}
