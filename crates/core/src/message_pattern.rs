//! The one matcher for the regular expressions the service searches in failure messages: the
//! extended failure policy's `onMessage.pattern` and JobSet's `onJobFailureMessagePatterns`.
//!
//! Its cost is bounded by construction. A pattern is compiled once, when its document is
//! read, into a fully built dense DFA, and searching a message is then one table step per
//! byte, whatever the pattern. Building is where a pattern's cost is paid, so the syntax and
//! the automaton are limited:
//! - RE2's and Go's syntax limits: a counted repetition may not exceed
//!   [`MAX_REPETITION`], groups may nest at most [`NEST_LIMIT`] deep;
//! - the source is at most [`MAX_SOURCE_BYTES`], its NFA at most [`MAX_NFA_BYTES`], its
//!   determinization at most [`MAX_DETERMINIZE_BYTES`] and the DFA at most [`MAX_DFA_BYTES`].
//!
//! A pattern past a limit is refused with an error naming it; nothing falls back to a slower
//! engine. `\b` and its relatives are ASCII word boundaries, as in RE2 and Go (a dense DFA
//! cannot look at Unicode word characters across a boundary); classes such as `\w` and `.`
//! keep the regex crate's Unicode meaning.
//!
//! How many bytes the matcher scans is counted per thread ([`bytes_scanned`]), so tests can
//! assert the cost of a decision without timing it.

use std::cell::Cell;
use std::sync::Arc;

use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::nfa::thompson;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind};
use regex_syntax::hir::{self, Hir, HirKind, Look};

/// Largest count a counted repetition (`{n}`, `{n,}`, `{n,m}`) may use: RE2's and Go's.
pub const MAX_REPETITION: u32 = 1000;
/// Deepest nesting of groups and repetitions a pattern may use.
pub const NEST_LIMIT: u32 = 64;
/// Longest pattern source, in bytes.
pub const MAX_SOURCE_BYTES: usize = 1024;
/// Largest Thompson NFA a pattern may compile to, in bytes of heap. With the two limits below
/// it bounds a pattern's build (each DFA state walks at most the whole NFA): a few
/// milliseconds at worst, measured on patterns built to hit each limit.
pub const MAX_NFA_BYTES: usize = 16 * 1024;
/// Most heap the subset construction may use while building a pattern's DFA, in bytes.
pub const MAX_DETERMINIZE_BYTES: usize = 64 * 1024;
/// Largest DFA a pattern may build, in bytes of heap. Everyday patterns need a few KiB
/// (`(?i)(out of memory|oom|cuda error \d+|nccl timeout)`: 12 KiB).
pub const MAX_DFA_BYTES: usize = 32 * 1024;

/// Most message bytes one decision's patterns may search (message bytes × patterns tried),
/// for the Job document and JobSet alike: about a second of matching at ~2 ns a byte.
pub const MAX_SCAN_BYTES: u64 = 512 * 1024 * 1024;

/// The size limits a pattern is built under.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// [`MAX_NFA_BYTES`].
    pub nfa_bytes: usize,
    /// [`MAX_DETERMINIZE_BYTES`].
    pub determinize_bytes: usize,
    /// [`MAX_DFA_BYTES`].
    pub dfa_bytes: usize,
    /// Whether DFA states with few exits search ahead with memchr.
    pub accelerate: bool,
}

impl Limits {
    /// The limits every pattern is built under.
    pub const DEFAULT: Limits = Limits {
        nfa_bytes: MAX_NFA_BYTES,
        determinize_bytes: MAX_DETERMINIZE_BYTES,
        dfa_bytes: MAX_DFA_BYTES,
        // Acceleration (memchr from states with few exits) costs up to ~40 ns a byte
        // when such a state is left at once; without it every byte is ~2 ns.
        accelerate: false,
    };
}

thread_local! {
    /// Bytes searched by [`BoundedPattern::is_match`] on this thread (tests read it).
    static SCANNED: Cell<u64> = const { Cell::new(0) };
}

/// How many message bytes [`BoundedPattern::is_match`] has searched on this thread so far.
pub fn bytes_scanned() -> u64 {
    SCANNED.with(Cell::get)
}

/// Why a pattern is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// The source is longer than [`MAX_SOURCE_BYTES`].
    #[error("the pattern is {len} bytes; it may have at most {MAX_SOURCE_BYTES}")]
    TooLong {
        /// The source's length in bytes.
        len: usize,
    },
    /// Not a regular expression (or nested past [`NEST_LIMIT`]).
    #[error("{0}")]
    Syntax(String),
    /// A counted repetition above [`MAX_REPETITION`]; RE2 and Go refuse it too.
    #[error(
        "invalid repeat count {count}: a counted repetition may be at most {MAX_REPETITION} (as in RE2 and Go)"
    )]
    Repetition {
        /// The largest count written.
        count: u32,
    },
    /// The pattern is valid, but its matcher would be larger than a limit.
    #[error(
        "the pattern's matcher is too large (limits: {MAX_NFA_BYTES}-byte NFA, {MAX_DFA_BYTES}-byte DFA); shorten it or bound it differently"
    )]
    TooLarge,
}

impl PatternError {
    /// Whether RE2 (and so Go's regexp, JobSet's engine) refuses the pattern too. The size
    /// limits are this service's own: a pattern refused only by them is valid upstream.
    pub fn invalid_in_re2(&self) -> bool {
        matches!(
            self,
            PatternError::Syntax(_) | PatternError::Repetition { .. }
        )
    }
}

/// A compiled message pattern: its source and its dense DFA.
#[derive(Clone, Debug)]
pub struct BoundedPattern {
    source: String,
    dfa: Arc<dense::DFA<Vec<u32>>>,
}

impl PartialEq for BoundedPattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl BoundedPattern {
    /// Compiles `source` within the module's limits.
    pub fn new(source: &str) -> Result<Self, PatternError> {
        Self::with_limits(source, &Limits::DEFAULT)
    }

    /// Compiles `source` within `limits` (for measuring what a limit costs).
    #[doc(hidden)]
    pub fn with_limits(source: &str, limits: &Limits) -> Result<Self, PatternError> {
        if source.len() > MAX_SOURCE_BYTES {
            return Err(PatternError::TooLong { len: source.len() });
        }
        let syntax_error =
            |e: &dyn std::fmt::Display| PatternError::Syntax(syntax_summary(&e.to_string()));
        let ast = regex_syntax::ast::parse::ParserBuilder::new()
            .nest_limit(NEST_LIMIT)
            .build()
            .parse(source)
            .map_err(|e| syntax_error(&e))?;
        let rewritten = ascii_perl_classes(source, &ast);
        let parsed = regex_syntax::ParserBuilder::new()
            .nest_limit(NEST_LIMIT)
            .build()
            .parse(&rewritten)
            .map_err(|e| syntax_error(&e))?;
        let mut largest = 0;
        let hir = ascii_word_boundaries(parsed, &mut largest);
        if largest > MAX_REPETITION {
            return Err(PatternError::Repetition { count: largest });
        }
        let nfa = thompson::Compiler::new()
            .syntax(syntax::Config::new().nest_limit(NEST_LIMIT))
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(limits.nfa_bytes))
                    .which_captures(thompson::WhichCaptures::None)
                    .shrink(false),
            )
            .build_from_hir(&hir)
            .map_err(|_| PatternError::TooLarge)?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::All)
                    .start_kind(StartKind::Unanchored)
                    .minimize(false)
                    .accelerate(limits.accelerate)
                    .determinize_size_limit(Some(limits.determinize_bytes))
                    .dfa_size_limit(Some(limits.dfa_bytes)),
            )
            .build_from_nfa(&nfa)
            .map_err(|_| PatternError::TooLarge)?;
        Ok(BoundedPattern {
            source: source.to_string(),
            dfa: Arc::new(dfa),
        })
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the pattern occurs anywhere in `text`: one DFA step per byte, stopping at the
    /// first match.
    pub fn is_match(&self, text: &str) -> bool {
        SCANNED.with(|c| {
            c.set(
                c.get()
                    .saturating_add(u64::try_from(text.len()).unwrap_or(u64::MAX)),
            );
        });
        let input = Input::new(text).earliest(true);
        // The DFA has no quit bytes and an unanchored start, so a search cannot fail; an
        // error would mean "no match found", which is what it reports.
        matches!(self.dfa.try_search_fwd(&input), Ok(Some(_)))
    }

    /// Heap the DFA holds, in bytes (at most [`MAX_DFA_BYTES`]).
    pub fn memory_usage(&self) -> usize {
        self.dfa.memory_usage()
    }
}

/// The one-line cause of a syntax error (the crate's message draws the pattern over lines).
fn syntax_summary(text: &str) -> String {
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(text.trim())
        .to_string()
}

/// `source` with each Perl class (`\d`, `\s`, `\w` and their negations) written as the ASCII
/// class RE2 and Go give it: Unicode's `\w` alone compiles to a DFA past the limits.
fn ascii_perl_classes(source: &str, ast: &regex_syntax::ast::Ast) -> String {
    use regex_syntax::ast::{self, Ast, ClassPerl, ClassPerlKind, ClassSetItem};
    struct Spans(Vec<(usize, usize, &'static str)>);
    impl Spans {
        fn note(&mut self, c: &ClassPerl) {
            let class = match (&c.kind, c.negated) {
                (ClassPerlKind::Digit, false) => "[0-9]",
                (ClassPerlKind::Digit, true) => "[^0-9]",
                (ClassPerlKind::Space, false) => "[\\t\\n\\f\\r ]",
                (ClassPerlKind::Space, true) => "[^\\t\\n\\f\\r ]",
                (ClassPerlKind::Word, false) => "[0-9A-Za-z_]",
                (ClassPerlKind::Word, true) => "[^0-9A-Za-z_]",
            };
            self.0.push((c.span.start.offset, c.span.end.offset, class));
        }
    }
    impl ast::Visitor for Spans {
        type Output = Vec<(usize, usize, &'static str)>;
        type Err = std::convert::Infallible;
        fn finish(self) -> Result<Self::Output, Self::Err> {
            Ok(self.0)
        }
        fn visit_pre(&mut self, ast: &Ast) -> Result<(), Self::Err> {
            if let Ast::ClassPerl(c) = ast {
                self.note(c);
            }
            Ok(())
        }
        fn visit_class_set_item_pre(&mut self, item: &ClassSetItem) -> Result<(), Self::Err> {
            if let ClassSetItem::Perl(c) = item {
                self.note(c);
            }
            Ok(())
        }
    }
    let Ok(mut spans) = ast::visit(ast, Spans(Vec::new()));
    if spans.is_empty() {
        return source.to_string();
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(source.len() + 16 * spans.len());
    let mut at = 0;
    for (start, end, class) in spans {
        // A nested class is valid inside brackets too (`[\w-]` → `[[0-9A-Za-z_]-]`).
        out.push_str(source.get(at..start).unwrap_or_default());
        out.push_str(class);
        at = end;
    }
    out.push_str(source.get(at..).unwrap_or_default());
    out
}

/// The HIR with every Unicode word-boundary assertion made ASCII (what a dense DFA can
/// decide, and RE2's meaning of `\b`), noting the largest repetition count in `largest`.
fn ascii_word_boundaries(expr: Hir, largest: &mut u32) -> Hir {
    match expr.into_kind() {
        HirKind::Look(look) => Hir::look(ascii_look(look)),
        HirKind::Repetition(rep) => {
            *largest = (*largest).max(rep.min).max(rep.max.unwrap_or(0));
            Hir::repetition(hir::Repetition {
                sub: Box::new(ascii_word_boundaries(*rep.sub, largest)),
                ..rep
            })
        }
        HirKind::Capture(cap) => Hir::capture(hir::Capture {
            sub: Box::new(ascii_word_boundaries(*cap.sub, largest)),
            ..cap
        }),
        HirKind::Concat(subs) => Hir::concat(
            subs.into_iter()
                .map(|h| ascii_word_boundaries(h, largest))
                .collect(),
        ),
        HirKind::Alternation(subs) => Hir::alternation(
            subs.into_iter()
                .map(|h| ascii_word_boundaries(h, largest))
                .collect(),
        ),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(lit) => Hir::literal(lit.0),
        HirKind::Class(class) => Hir::class(class),
    }
}

/// The ASCII counterpart of a Unicode word assertion; any other assertion as it is.
fn ascii_look(look: Look) -> Look {
    match look {
        Look::WordUnicode => Look::WordAscii,
        Look::WordUnicodeNegate => Look::WordAsciiNegate,
        Look::WordStartUnicode => Look::WordStartAscii,
        Look::WordEndUnicode => Look::WordEndAscii,
        Look::WordStartHalfUnicode => Look::WordStartHalfAscii,
        Look::WordEndHalfUnicode => Look::WordEndHalfAscii,
        other => other,
    }
}

#[cfg(test)]
mod tests;
