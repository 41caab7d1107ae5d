use super::*;

fn compiled(source: &str) -> BoundedPattern {
    BoundedPattern::new(source).expect("a test pattern compiles")
}

#[test]
fn everyday_patterns_compile_and_match() {
    assert!(compiled("(?i)out of memory").is_match("Fatal: OUT OF MEMORY while x"));
    assert!(compiled("CUDA error").is_match("got a CUDA error here"));
    assert!(!compiled("CUDA error").is_match("cuda Error"));
    assert!(compiled(r"^exit \d+$").is_match("exit 42"));
    assert!(compiled(r"(?m)^panic:").is_match("ok\npanic: boom"));
    assert!(compiled(".").is_match("é"));
    assert!(!compiled("x").is_match(""));
}

#[test]
fn word_boundaries_are_ascii() {
    let oom = compiled(r"\bOOM\b");
    assert!(oom.is_match("killed: OOM."));
    assert!(!oom.is_match("BOOM"));
    // ASCII `\b`: é is not a word character, so a boundary sits before "OOM".
    assert!(oom.is_match("éOOM"));
    assert!(compiled(r"\Bx").is_match("ax"));
}

#[test]
fn perl_classes_are_ascii_as_in_re2() {
    let word = compiled(r"^\w+$");
    assert!(word.is_match("abc_09"));
    assert!(!word.is_match("é"));
    assert!(compiled(r"^\W$").is_match("é"));
    assert!(compiled(r"^[\w-]+ failed: \d+$").is_match("init-db failed: 3"));
    assert!(!compiled(r"\d").is_match("٣"));
    assert!(compiled(r"a\sb").is_match("a\tb"));
    assert!(compiled(r"^\S+$").is_match("é"));
    // Unicode classes written out keep their meaning.
    assert!(compiled(r"^\p{Greek}$").is_match("λ"));
}

#[test]
fn repetition_above_1000_is_refused_as_re2_does() {
    assert!(BoundedPattern::new("a{100}").is_ok());
    // 1000 is RE2's limit too: refused only if its automaton is too large.
    assert_eq!(
        BoundedPattern::new("a{1000}").err(),
        Some(PatternError::TooLarge)
    );
    for source in ["a{1001}", "a{2,1001}", "a{1001,}", "(?:b|a{5000})c"] {
        let err = BoundedPattern::new(source).err();
        assert!(
            matches!(err, Some(PatternError::Repetition { count }) if count > MAX_REPETITION),
            "{source}: {err:?}"
        );
        assert!(err.is_some_and(|e| e.invalid_in_re2()));
    }
}

#[test]
fn reviewer_patterns_are_refused_as_too_large() {
    for source in [r"a(?s:.){200}b", "a[ac]{1000}b", r"(?s:.){1000}x"] {
        let err = BoundedPattern::new(source).err();
        assert_eq!(err, Some(PatternError::TooLarge), "{source}");
        assert!(err.is_some_and(|e| !e.invalid_in_re2()));
    }
}

#[test]
fn nesting_and_length_are_bounded() {
    let deep = format!("{}a{}", "(".repeat(100), ")".repeat(100));
    assert!(matches!(
        BoundedPattern::new(&deep),
        Err(PatternError::Syntax(_))
    ));
    let long = "a".repeat(MAX_SOURCE_BYTES + 1);
    assert_eq!(
        BoundedPattern::new(&long).err(),
        Some(PatternError::TooLong {
            len: MAX_SOURCE_BYTES + 1
        })
    );
    assert!(matches!(
        BoundedPattern::new("(unclosed"),
        Err(PatternError::Syntax(ref m)) if !m.contains('\n')
    ));
}

#[test]
fn a_dfa_stays_within_its_limit() {
    let p = compiled(r"(?i)(out of memory|oom|cuda error \d+|nccl timeout)");
    assert!(p.memory_usage() <= MAX_DFA_BYTES);
}

#[test]
fn the_counter_counts_bytes_searched() {
    let p = compiled("needle");
    let before = bytes_scanned();
    assert!(!p.is_match(&"x".repeat(1000)));
    assert!(p.is_match("a needle"));
    assert_eq!(bytes_scanned() - before, 1008);
}
