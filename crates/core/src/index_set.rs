//! Sets of completion indexes as interval lists, and the `1,3-5,7` text form
//! that `status.completedIndexes`, `status.failedIndexes` and
//! `successPolicy.rules[].succeededIndexes` use.
//!
//! Memory and time depend on the number of intervals, never on `completions`:
//! the full range of 2^31-1 indexes is a single interval.

use std::fmt;

use crate::go_text::go_quote;

/// A closed interval of indexes, `first..=last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Interval {
    /// The lowest index in the interval.
    pub first: i32,
    /// The highest index in the interval (never below `first` inside an [`IndexSet`]).
    pub last: i32,
}

impl Interval {
    /// The interval `first..=last`.
    pub const fn new(first: i32, last: i32) -> Self {
        Interval { first, last }
    }

    /// How many indexes it holds (0 when `last < first`).
    pub fn len(&self) -> u64 {
        u64::try_from(i64::from(self.last) - i64::from(self.first) + 1).unwrap_or(0)
    }

    /// Whether it holds no index.
    pub fn is_empty(&self) -> bool {
        self.last < self.first
    }
}

/// A set of indexes: sorted, disjoint, non-adjacent, non-empty closed intervals.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct IndexSet {
    intervals: Vec<Interval>,
}

/// Why a string is not a valid index list (the API server's validation).
///
/// Each message is the API server's own text, so errors read the same as upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IndexFormatError {
    /// A fragment has more than one `-`.
    #[error(
        "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
        go_quote(.fragment)
    )]
    TooManyParts {
        /// The whole comma-separated fragment.
        fragment: String,
    },
    /// A bound is not a decimal integer.
    #[error("cannot convert string to integer for index: {}", go_quote(.part))]
    NotAnInteger {
        /// The offending bound, as written.
        part: String,
    },
    /// A bound is not below `completions`.
    #[error("too large index: {}", go_quote(.part))]
    TooLarge {
        /// The offending bound, as written.
        part: String,
    },
    /// An interval does not start after the previous one ends, or its end is not after its start.
    #[error("non-increasing order, previous: {previous}, current: {current}")]
    NonIncreasing {
        /// The previous bound.
        previous: i32,
        /// The bound that should have been larger.
        current: i32,
    },
}

impl IndexSet {
    /// The empty set.
    pub fn new() -> Self {
        IndexSet::default()
    }

    /// The set of the given indexes, in any order, duplicates allowed.
    pub fn from_indexes(indexes: impl IntoIterator<Item = i32>) -> Self {
        let indexes = indexes.into_iter();
        // Sized for the most indexes there can be (a sync's pods), so that
        // neither vector is copied as it grows.
        let mut sorted: Vec<i32> = Vec::with_capacity(indexes.size_hint().1.unwrap_or(0));
        sorted.extend(indexes);
        sorted.sort_unstable();
        sorted.dedup();
        let mut set = IndexSet {
            intervals: Vec::with_capacity(sorted.len()),
        };
        for ix in sorted {
            set.push_sorted(Interval::new(ix, ix));
        }
        set
    }

    /// The union of the given intervals, in any order; empty intervals (`last < first`) are dropped.
    pub fn from_intervals(intervals: impl IntoIterator<Item = Interval>) -> Self {
        let mut sorted: Vec<Interval> = intervals.into_iter().filter(|iv| !iv.is_empty()).collect();
        sorted.sort_unstable_by_key(|iv| iv.first);
        let mut set = IndexSet::new();
        for iv in sorted {
            set.push_sorted(iv);
        }
        set
    }

    /// The intervals, in ascending order.
    pub fn intervals(&self) -> &[Interval] {
        &self.intervals
    }

    /// Whether `ix` is in the set (binary search over the intervals).
    pub fn contains(&self, ix: i32) -> bool {
        let pos = self.intervals.partition_point(|iv| iv.last < ix);
        self.intervals.get(pos).is_some_and(|iv| iv.first <= ix)
    }

    /// How many indexes the set holds.
    pub fn total(&self) -> u64 {
        self.intervals.iter().map(Interval::len).sum()
    }

    /// Whether the set holds no index.
    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }

    /// The indexes in both sets together (upstream's `merge`).
    pub fn union(&self, other: &IndexSet) -> IndexSet {
        let mut result = IndexSet {
            intervals: Vec::with_capacity(self.intervals.len() + other.intervals.len()),
        };
        let (mut a, mut b) = (
            self.intervals.iter().peekable(),
            other.intervals.iter().peekable(),
        );
        // A two-pointer merge by start keeps the work linear in the interval counts.
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.first < y.first => a.next(),
                (Some(_), Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            if let Some(iv) = next {
                result.push_sorted(*iv);
            }
        }
        result
    }

    /// How many indexes are in both sets, by a two-pointer sweep over the intervals.
    pub fn overlap_count(&self, other: &IndexSet) -> u64 {
        let (mut i, mut j, mut count) = (0, 0, 0u64);
        while let (Some(x), Some(y)) = (self.intervals.get(i), other.intervals.get(j)) {
            count += Interval::new(x.first.max(y.first), x.last.min(y.last)).len();
            // Advance whichever interval ends first; it cannot overlap anything later.
            if x.last <= y.last {
                i += 1;
            }
            if y.last <= x.last {
                j += 1;
            }
        }
        count
    }

    /// The indexes in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = i32> + '_ {
        self.intervals.iter().flat_map(|iv| iv.first..=iv.last)
    }

    /// The first `count` indexes of `0..completions` that are not in the set.
    ///
    /// Work is bounded by the number of intervals plus `count`, as in upstream's
    /// `firstPendingIndexes`.
    pub fn first_missing(&self, count: usize, completions: i32) -> Vec<i32> {
        let limit = i64::from(completions);
        let mut result =
            Vec::with_capacity(count.min(usize::try_from(limit).unwrap_or(0)).min(1024));
        // i64 so that `last + 1` cannot overflow at i32::MAX.
        let mut candidate: i64 = 0;
        for iv in &self.intervals {
            if result.len() >= count || candidate >= limit {
                break;
            }
            fill_missing(
                &mut result,
                &mut candidate,
                limit.min(i64::from(iv.first)),
                count,
            );
            candidate = candidate.max(i64::from(iv.last) + 1);
        }
        fill_missing(&mut result, &mut candidate, limit, count);
        result
    }

    /// Parses an index list the way the Job controller reads its own status
    /// (upstream `parseIndexesFromString`), keeping only indexes below `completions`.
    ///
    /// Lenient, quirks included: a piece whose bounds are not integers is skipped
    /// (so `-1` is skipped), parts after a second `-` are ignored, parsing stops at
    /// the first piece that starts at or beyond `completions`, and an end beyond it
    /// is clamped. Order is not checked. Upstream keeps out-of-order, overlapping
    /// or reversed pieces as a malformed list; here the pieces upstream would keep
    /// become one normalized set (such strings never pass API validation).
    pub fn parse_lenient(s: &str, completions: i32) -> IndexSet {
        if s.is_empty() {
            return IndexSet::new();
        }
        let completions = i64::from(completions);
        // Raw pieces as upstream builds them, including its merge into the previous piece.
        let mut raw: Vec<(i64, i64)> = Vec::new();
        for piece in s.split(',') {
            let mut parts = piece.split('-');
            let Some(Ok(first)) = parts.next().map(parse_go_int) else {
                continue;
            };
            if first >= completions {
                break;
            }
            let last = match parts.next() {
                None => first,
                Some(part) => match parse_go_int(part) {
                    Ok(last) => last.min(completions - 1),
                    Err(()) => continue,
                },
            };
            match raw.last_mut() {
                Some(prev) if prev.1 == first - 1 => prev.1 = last,
                _ => raw.push((first, last)),
            }
        }
        IndexSet::from_intervals(raw.into_iter().filter_map(|(first, last)| {
            Some(Interval::new(
                i32::try_from(first).ok()?,
                i32::try_from(last).ok()?,
            ))
        }))
    }

    /// Parses an index list as the API server validates it (upstream
    /// `validateIndexesFormat`): every index below `completions`, intervals in
    /// strictly increasing order, at most one `-` per interval.
    pub fn parse_strict(s: &str, completions: i32) -> Result<IndexSet, IndexFormatError> {
        let mut set = IndexSet::new();
        if s.is_empty() {
            return Ok(set);
        }
        let mut previous_last: Option<i32> = None;
        for fragment in s.split(',') {
            let iv = parse_strict_interval(fragment, completions)?;
            if let Some(previous) = previous_last
                && previous >= iv.first
            {
                return Err(IndexFormatError::NonIncreasing {
                    previous,
                    current: iv.first,
                });
            }
            previous_last = Some(iv.last);
            set.push_sorted(iv);
        }
        Ok(set)
    }

    /// Appends an interval that starts no earlier than the last one, joining it
    /// to the last one when they overlap or touch.
    fn push_sorted(&mut self, iv: Interval) {
        match self.intervals.last_mut() {
            Some(last) if i64::from(iv.first) <= i64::from(last.last) + 1 => {
                last.last = last.last.max(iv.last);
            }
            _ => self.intervals.push(iv),
        }
    }
}

/// Pushes `candidate, candidate + 1, ...` below `end` until `result` holds `count` indexes.
fn fill_missing(result: &mut Vec<i32>, candidate: &mut i64, end: i64, count: usize) {
    while *candidate < end && result.len() < count {
        if let Ok(ix) = i32::try_from(*candidate) {
            result.push(ix);
        }
        *candidate += 1;
    }
}

/// One comma-separated fragment of a strictly validated list.
fn parse_strict_interval(fragment: &str, completions: i32) -> Result<Interval, IndexFormatError> {
    let parts: Vec<&str> = fragment.split('-').collect();
    let (first_str, last_str) = match parts.as_slice() {
        [first] => (*first, None),
        [first, last] => (*first, Some(*last)),
        _ => {
            return Err(IndexFormatError::TooManyParts {
                fragment: fragment.to_string(),
            });
        }
    };
    let first = parse_strict_bound(first_str, completions)?;
    let Some(last_str) = last_str else {
        return Ok(Interval::new(first, first));
    };
    let last = parse_strict_bound(last_str, completions)?;
    if first >= last {
        return Err(IndexFormatError::NonIncreasing {
            previous: first,
            current: last,
        });
    }
    Ok(Interval::new(first, last))
}

/// One bound of a strictly validated interval: an integer below `completions`.
fn parse_strict_bound(part: &str, completions: i32) -> Result<i32, IndexFormatError> {
    let value = parse_go_int(part).map_err(|()| IndexFormatError::NotAnInteger {
        part: part.to_string(),
    })?;
    if value >= i64::from(completions) {
        return Err(IndexFormatError::TooLarge {
            part: part.to_string(),
        });
    }
    // Below an i32 `completions` and never negative (a '-' splits the piece), so it fits.
    i32::try_from(value).map_err(|_| IndexFormatError::TooLarge {
        part: part.to_string(),
    })
}

/// Go's `strconv.Atoi` on a 64-bit platform: optional sign, decimal digits, no spaces.
fn parse_go_int(s: &str) -> Result<i64, ()> {
    // Rust's integer parsing accepts exactly the same syntax, and fails on overflow as Go does.
    s.parse::<i64>().map_err(|_| ())
}

impl fmt::Display for IndexSet {
    /// Upstream's form: `a` for one index, `a,b` for two, `a-b` for three or more.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A status can list tens of thousands of intervals: the text is built
        // here and handed over once, not piece by piece through the formatter.
        let mut text = String::with_capacity(self.intervals.len().saturating_mul(8));
        for (i, iv) in self.intervals.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            push_index(&mut text, iv.first);
            if iv.last > iv.first {
                let sep = if i64::from(iv.last) == i64::from(iv.first) + 1 {
                    ','
                } else {
                    '-'
                };
                text.push(sep);
                push_index(&mut text, iv.last);
            }
        }
        f.write_str(&text)
    }
}

/// Appends an index in decimal (without `write!`, which costs several times more).
fn push_index(text: &mut String, ix: i32) {
    // i32::MIN is "-2147483648": 11 bytes.
    let mut buf = [0u8; 11];
    let mut at = buf.len();
    let mut rest = ix.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if ix < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    // Only ASCII digits and '-' were written.
    text.extend(buf[at..].iter().map(|&b| char::from(b)));
}

#[cfg(test)]
mod tests {
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
}
