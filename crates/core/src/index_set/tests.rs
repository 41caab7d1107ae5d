use super::*;

/// Intervals as `(first, last)` pairs, to keep the tables short.
type Ivs = &'static [(i32, i32)];

fn set(ivs: &[(i32, i32)]) -> IndexSet {
    IndexSet::from_intervals(ivs.iter().map(|&(a, b)| Interval::new(a, b)))
}

fn pairs(s: &IndexSet) -> Vec<(i32, i32)> {
    s.intervals().iter().map(|iv| (iv.first, iv.last)).collect()
}

#[test]
fn from_indexes_sorts_dedups_and_joins_runs() {
    let cases: &[(&[i32], Ivs)] = &[
        (&[], &[]),
        (&[5], &[(5, 5)]),
        (&[3, 1, 2, 2, 7, 5, 5], &[(1, 3), (5, 5), (7, 7)]),
        (
            &[i32::MAX, i32::MAX - 1, 0],
            &[(0, 0), (i32::MAX - 1, i32::MAX)],
        ),
        (&[i32::MIN, -1, 0, 1], &[(i32::MIN, i32::MIN), (-1, 1)]),
    ];
    for (input, want) in cases {
        let got = IndexSet::from_indexes(input.iter().copied());
        assert_eq!(pairs(&got), *want, "input {input:?}");
    }
}

#[test]
fn from_intervals_normalizes_and_drops_empty_ones() {
    let got = set(&[(6, 8), (1, 3), (4, 4), (10, 9), (7, 12), (20, 20)]);
    assert_eq!(pairs(&got), vec![(1, 4), (6, 12), (20, 20)]);
}

// Upstream TestIntervalsHaveIndex.
#[test]
fn contains_finds_indexes_by_binary_search() {
    let cases: &[(&str, Ivs, i32, bool)] = &[
        ("empty", &[], 4, false),
        ("before all", &[(2, 4), (5, 7)], 1, false),
        ("after all", &[(2, 4), (6, 8)], 9, false),
        ("in between", &[(2, 4), (6, 8)], 5, false),
        ("in first", &[(2, 4), (6, 8)], 2, true),
        ("in second", &[(2, 4), (6, 8)], 8, true),
        ("at i32::MAX", &[(0, i32::MAX)], i32::MAX, true),
        ("negative", &[(0, 3)], -1, false),
        ("i32::MIN", &[(0, 3)], i32::MIN, false),
    ];
    for (name, ivs, ix, want) in cases {
        assert_eq!(set(ivs).contains(*ix), *want, "{name}");
    }
}

#[test]
fn total_counts_indexes_without_overflow() {
    assert_eq!(IndexSet::new().total(), 0);
    assert_eq!(set(&[(1, 3), (5, 5)]).total(), 4);
    assert_eq!(set(&[(0, i32::MAX)]).total(), 1 << 31);
    assert_eq!(set(&[(i32::MIN, i32::MAX)]).total(), 1 << 32);
}

// Upstream TestCalculateSucceededIndexes: the stored list parsed leniently, then
// merged with the newly succeeded indexes (upstream withOrderedIndexes).
#[test]
fn parse_then_union_matches_calculate_succeeded_indexes() {
    struct Case {
        name: &'static str,
        prev: &'static str,
        new: &'static [i32],
        completions: i32,
        want_prev: &'static [(i32, i32)],
        want: &'static [(i32, i32)],
    }
    let cases = [
        Case {
            name: "one index",
            prev: "",
            new: &[1],
            completions: 2,
            want_prev: &[],
            want: &[(1, 1)],
        },
        Case {
            name: "two separate",
            prev: "",
            new: &[5, 5, 10],
            completions: 11,
            want_prev: &[],
            want: &[(5, 5), (10, 10)],
        },
        Case {
            name: "two intervals",
            prev: "",
            new: &[2, 3, 5, 6, 7],
            completions: 8,
            want_prev: &[],
            want: &[(2, 3), (5, 7)],
        },
        Case {
            name: "prev interval out of range",
            prev: "0-5,8-10",
            new: &[],
            completions: 8,
            want_prev: &[(0, 5)],
            want: &[(0, 5)],
        },
        Case {
            name: "prev interval partially out of range",
            prev: "0-5,8-10",
            new: &[],
            completions: 10,
            want_prev: &[(0, 5), (8, 9)],
            want: &[(0, 5), (8, 9)],
        },
        Case {
            name: "prev and new separate",
            prev: "0,4,5,10-12",
            new: &[2, 7, 8],
            completions: 13,
            want_prev: &[(0, 0), (4, 5), (10, 12)],
            want: &[(0, 0), (2, 2), (4, 5), (7, 8), (10, 12)],
        },
        Case {
            name: "prev between new",
            prev: "3,4,6",
            new: &[2, 7, 8],
            completions: 9,
            want_prev: &[(3, 4), (6, 6)],
            want: &[(2, 4), (6, 8)],
        },
        Case {
            name: "new between prev",
            prev: "2,7,8",
            new: &[3, 4, 6],
            completions: 9,
            want_prev: &[(2, 2), (7, 8)],
            want: &[(2, 4), (6, 8)],
        },
        Case {
            name: "new within prev",
            prev: "2-7",
            new: &[0, 3, 5, 9],
            completions: 10,
            want_prev: &[(2, 7)],
            want: &[(0, 0), (2, 7), (9, 9)],
        },
        Case {
            name: "corrupted interval",
            prev: "0,1-foo,bar",
            new: &[3],
            completions: 4,
            want_prev: &[(0, 0)],
            want: &[(0, 0), (3, 3)],
        },
    ];
    for c in cases {
        let prev = IndexSet::parse_lenient(c.prev, c.completions);
        assert_eq!(pairs(&prev), c.want_prev, "{}: prev", c.name);
        let got = prev.union(&IndexSet::from_indexes(c.new.iter().copied()));
        assert_eq!(pairs(&got), c.want, "{}", c.name);
    }
}

#[test]
fn parse_lenient_reproduces_upstream_quirks() {
    let cases: &[(&str, &str, i32, Ivs)] = &[
        ("empty string", "", 10, &[]),
        ("corrupted pieces are skipped", "0,1-foo,bar", 4, &[(0, 0)]),
        ("negative number is skipped", "-1,2", 4, &[(2, 2)]),
        (
            "parts after the second dash are ignored",
            "1-2-3",
            10,
            &[(1, 2)],
        ),
        (
            "stops at the first start beyond completions",
            "0,5,2",
            4,
            &[(0, 0)],
        ),
        ("end is clamped", "1-100", 4, &[(1, 3)]),
        ("adjacent pieces join", "1,2,3-4,6", 10, &[(1, 4), (6, 6)]),
        (
            "joining a reversed piece shrinks the previous one",
            "0-4,5-2",
            10,
            &[(0, 2)],
        ),
        ("out of order is not checked", "5,1", 10, &[(1, 1), (5, 5)]),
        ("leading plus is an integer, as in Go", "+3", 10, &[(3, 3)]),
        ("spaces are not integers", " 3,4", 10, &[(4, 4)]),
        ("empty pieces are skipped", ",,3,", 10, &[(3, 3)]),
        ("missing end skips the piece", "3-", 10, &[]),
        (
            "too large for i64 is skipped",
            "99999999999999999999,1",
            10,
            &[(1, 1)],
        ),
        (
            "beyond i32 stops parsing",
            "1,4294967296",
            i32::MAX,
            &[(1, 1)],
        ),
        ("zero completions gives nothing", "0,1", 0, &[]),
        ("negative completions gives nothing", "0,1", -5, &[]),
        ("full range", "0-2147483646", i32::MAX, &[(0, i32::MAX - 1)]),
        (
            "end beyond i64 skips the piece",
            "1-99999999999999999999",
            10,
            &[],
        ),
    ];
    for (name, input, completions, want) in cases {
        let got = IndexSet::parse_lenient(input, *completions);
        assert_eq!(pairs(&got), *want, "{name}");
    }
}

#[test]
fn parse_strict_accepts_valid_lists() {
    let cases: &[(&str, i32, Ivs)] = &[
        ("", 10, &[]),
        ("0", 1, &[(0, 0)]),
        ("1,3-5,7", 10, &[(1, 1), (3, 5), (7, 7)]),
        ("1,2", 10, &[(1, 2)]),
        ("1-3,4-6", 10, &[(1, 6)]),
        ("+3", 10, &[(3, 3)]),
        ("0-2147483646", i32::MAX, &[(0, i32::MAX - 1)]),
    ];
    for (input, completions, want) in cases {
        let got = IndexSet::parse_strict(input, *completions);
        assert_eq!(got.map(|s| pairs(&s)), Ok(want.to_vec()), "{input:?}");
    }
}

#[test]
fn parse_strict_rejects_with_upstream_messages() {
    let cases: &[(&str, i32, &str)] = &[
        (
            "1-2-3",
            10,
            r#"the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'"#,
        ),
        (
            "x",
            10,
            r#"cannot convert string to integer for index: "x""#,
        ),
        (
            "1-x",
            10,
            r#"cannot convert string to integer for index: "x""#,
        ),
        (
            "-1",
            10,
            r#"cannot convert string to integer for index: """#,
        ),
        (
            "1,",
            10,
            r#"cannot convert string to integer for index: """#,
        ),
        ("5", 5, r#"too large index: "5""#),
        ("1-5", 5, r#"too large index: "5""#),
        ("99999999999", 5, r#"too large index: "99999999999""#),
        (
            "99999999999999999999",
            5,
            r#"cannot convert string to integer for index: "99999999999999999999""#,
        ),
        ("3,2", 10, "non-increasing order, previous: 3, current: 2"),
        ("1-3,3", 10, "non-increasing order, previous: 3, current: 3"),
        ("3-3", 10, "non-increasing order, previous: 3, current: 3"),
        ("4-2", 10, "non-increasing order, previous: 4, current: 2"),
        ("0", 0, r#"too large index: "0""#),
        (
            "\"a\\b\"",
            10,
            r#"cannot convert string to integer for index: "\"a\\b\"""#,
        ),
        (
            "a\tb\u{7f}\u{1}",
            10,
            r#"cannot convert string to integer for index: "a\tb\x7f\x01""#,
        ),
        (
            "é€𝄞",
            10,
            r#"cannot convert string to integer for index: "é€𝄞""#,
        ),
        (
            "\u{a0}\u{ad}\u{10ffff}",
            10,
            r#"cannot convert string to integer for index: "\u00a0\u00ad\U0010ffff""#,
        ),
    ];
    for (input, completions, want) in cases {
        match IndexSet::parse_strict(input, *completions) {
            Ok(s) => panic!("{input:?} parsed as {s}"),
            Err(e) => assert_eq!(e.to_string(), *want, "{input:?}"),
        }
    }
}

#[test]
fn display_uses_upstream_format() {
    let cases: &[(Ivs, &str)] = &[
        (&[], ""),
        (&[(1, 1), (3, 5), (7, 7)], "1,3-5,7"),
        (&[(2, 2), (4, 5), (7, 9)], "2,4,5,7-9"),
        (&[(0, 1)], "0,1"),
        (&[(0, i32::MAX)], "0-2147483647"),
        (&[(i32::MAX - 1, i32::MAX)], "2147483646,2147483647"),
    ];
    for (ivs, want) in cases {
        assert_eq!(set(ivs).to_string(), *want);
    }
}

#[test]
fn display_writes_every_index_as_decimal() {
    for ix in [
        i32::MIN,
        -1_000_000,
        -10,
        -9,
        -1,
        0,
        1,
        9,
        10,
        99,
        100,
        12_345,
        i32::MAX,
    ] {
        assert_eq!(set(&[(ix, ix)]).to_string(), format!("{ix}"));
    }
}

#[test]
fn display_round_trips_through_both_parsers() {
    let s = set(&[(0, 0), (2, 3), (5, 9), (100, 100)]);
    let text = s.to_string();
    assert_eq!(IndexSet::parse_lenient(&text, 1000), s);
    assert_eq!(IndexSet::parse_strict(&text, 1000), Ok(s));
}

#[test]
fn union_joins_overlapping_and_adjacent_intervals() {
    let cases: &[(Ivs, Ivs, Ivs)] = &[
        (&[], &[], &[]),
        (&[(1, 2)], &[], &[(1, 2)]),
        (&[], &[(1, 2)], &[(1, 2)]),
        (&[(1, 2)], &[(3, 4)], &[(1, 4)]),
        (&[(1, 2)], &[(4, 5)], &[(1, 2), (4, 5)]),
        (&[(0, 10)], &[(2, 3), (5, 6)], &[(0, 10)]),
        (
            &[(0, 1), (5, 6)],
            &[(2, 2), (8, 9)],
            &[(0, 2), (5, 6), (8, 9)],
        ),
        (&[(0, 3), (10, 12)], &[(2, 11)], &[(0, 12)]),
        (&[(0, i32::MAX)], &[(i32::MAX, i32::MAX)], &[(0, i32::MAX)]),
        (&[(i32::MIN, -1)], &[(0, i32::MAX)], &[(i32::MIN, i32::MAX)]),
    ];
    for (a, b, want) in cases {
        assert_eq!(pairs(&set(a).union(&set(b))), *want, "{a:?} ∪ {b:?}");
        assert_eq!(pairs(&set(b).union(&set(a))), *want, "{b:?} ∪ {a:?}");
    }
}

#[test]
fn overlap_count_sweeps_both_lists() {
    let cases: &[(Ivs, Ivs, u64)] = &[
        (&[], &[(0, 5)], 0),
        (&[(1, 3), (5, 7)], &[(2, 4), (6, 8)], 4),
        (&[(2, 4), (8, 12)], &[(2, 5), (7, 15)], 8),
        (&[(0, 4), (6, 9)], &[(1, 3), (7, 8)], 5),
        (&[(0, 6), (8, 9)], &[(1, 3), (5, 9)], 7),
        (&[(10, 12)], &[(1, 3), (5, 7)], 0),
        (&[(0, i32::MAX)], &[(0, i32::MAX)], 1 << 31),
    ];
    for (a, b, want) in cases {
        assert_eq!(set(a).overlap_count(&set(b)), *want, "{a:?} ∩ {b:?}");
        assert_eq!(set(b).overlap_count(&set(a)), *want, "{b:?} ∩ {a:?}");
    }
}

#[test]
fn iter_yields_indexes_in_order_up_to_i32_max() {
    assert_eq!(
        set(&[(1, 3), (7, 7)]).iter().collect::<Vec<_>>(),
        vec![1, 2, 3, 7]
    );
    assert_eq!(
        set(&[(i32::MAX - 1, i32::MAX)]).iter().collect::<Vec<_>>(),
        vec![i32::MAX - 1, i32::MAX]
    );
    assert_eq!(IndexSet::new().iter().count(), 0);
}

// Upstream TestFirstPendingIndexes: the set is the union of active, succeeded and failed indexes.
#[test]
fn first_missing_matches_first_pending_indexes() {
    // (name, active indexes, succeeded and failed intervals, count, completions, want)
    type Case = (
        &'static str,
        &'static [i32],
        Ivs,
        usize,
        i32,
        &'static [i32],
    );
    let cases: &[Case] = &[
        ("cnt greater than completions", &[], &[], 5, 3, &[0, 1, 2]),
        ("cnt less than completions", &[], &[], 2, 5, &[0, 1]),
        ("first pods active", &[0, 1], &[], 3, 10, &[2, 3, 4]),
        (
            "last pods active or succeeded",
            &[6],
            &[(4, 5)],
            6,
            6,
            &[0, 1, 2, 3],
        ),
        (
            "mixed",
            &[3, 5, 8],
            &[(2, 4), (9, 9)],
            5,
            20,
            &[0, 1, 6, 7, 10],
        ),
        (
            "with failed indexes",
            &[3, 9],
            &[(1, 1), (5, 5), (9, 9), (2, 2), (6, 7)],
            5,
            20,
            &[0, 4, 8, 10, 11],
        ),
        ("zero count", &[], &[], 0, 5, &[]),
        ("zero completions", &[], &[], 5, 0, &[]),
        ("negative completions", &[], &[], 5, -3, &[]),
        ("all taken", &[], &[(0, 9)], 5, 10, &[]),
        ("negative indexes in the set", &[-4, -1], &[], 2, 5, &[0, 1]),
    ];
    for (name, active, others, count, completions, want) in cases {
        let taken = IndexSet::from_indexes(active.iter().copied()).union(&set(others));
        assert_eq!(taken.first_missing(*count, *completions), *want, "{name}");
    }
}

#[test]
fn first_missing_is_bounded_near_i32_max() {
    let taken = set(&[(0, i32::MAX - 3)]);
    assert_eq!(
        taken.first_missing(10, i32::MAX),
        vec![i32::MAX - 2, i32::MAX - 1]
    );
    let all = set(&[(0, i32::MAX)]);
    assert_eq!(all.first_missing(usize::MAX, i32::MAX), Vec::<i32>::new());
    let none = IndexSet::new();
    assert_eq!(none.first_missing(3, i32::MAX), vec![0, 1, 2]);
}

#[test]
fn sets_over_max_completions_stay_a_handful_of_intervals() {
    let completions = i32::MAX;
    let stored = format!("0-{},{}", i32::MAX - 10, i32::MAX - 5);
    let succeeded = IndexSet::parse_lenient(&stored, completions);
    let failed = IndexSet::from_indexes([i32::MAX - 8, i32::MAX - 7, i32::MAX - 1]);
    let all = succeeded.union(&failed);
    assert_eq!(
        pairs(&all),
        vec![
            (0, i32::MAX - 10),
            (i32::MAX - 8, i32::MAX - 7),
            (i32::MAX - 5, i32::MAX - 5),
            (i32::MAX - 1, i32::MAX - 1)
        ]
    );
    assert_eq!(all.total(), u64::try_from(i32::MAX).unwrap_or(0) - 5);
    assert_eq!(
        all.first_missing(10, completions),
        vec![
            i32::MAX - 9,
            i32::MAX - 6,
            i32::MAX - 4,
            i32::MAX - 3,
            i32::MAX - 2
        ]
    );
    assert_eq!(all.overlap_count(&succeeded), succeeded.total());
    assert!(all.contains(i32::MAX - 1));
    assert!(!all.contains(i32::MAX));
    assert_eq!(
        all.to_string(),
        "0-2147483637,2147483639,2147483640,2147483642,2147483646"
    );
}
