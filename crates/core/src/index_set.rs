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
mod tests;
