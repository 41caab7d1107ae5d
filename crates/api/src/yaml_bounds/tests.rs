use super::*;

fn depth_of(value: &serde_yaml::Value) -> usize {
    match value {
        serde_yaml::Value::Sequence(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        serde_yaml::Value::Mapping(map) => {
            1 + map
                .iter()
                .map(|(k, v)| depth_of(k).max(depth_of(v)))
                .max()
                .unwrap_or(0)
        }
        serde_yaml::Value::Tagged(t) => depth_of(&t.value),
        _ => 0,
    }
}

#[test]
fn deep_flow_nesting_is_refused_with_its_place_and_limit() {
    let text = "[".repeat(32 * 1024);
    let err = check(&text, usize::MAX).expect_err("too deep");
    assert_eq!(
        err,
        BoundsError::TooDeep {
            line: 1,
            column: MAX_NESTING + 1,
            limit: MAX_NESTING
        }
    );
    assert!(err.to_string().contains("at most 100 levels"), "{err}");
    let text = format!("a:\n  b: {}", "{x: ".repeat(200));
    assert!(matches!(
        check(&text, usize::MAX),
        Err(BoundsError::TooDeep { line: 2, .. })
    ));
    // Block nesting counts too: `- - - ...` and indented mappings.
    let text = "- ".repeat(150) + "x\n";
    assert!(check(&text, usize::MAX).is_err());
    let mut text = String::new();
    for i in 0..150 {
        text.push_str(&" ".repeat(i));
        text.push_str("k:\n");
    }
    assert!(check(&text, usize::MAX).is_err());
    assert_eq!(
        check("abc", 2),
        Err(BoundsError::TooLarge { bytes: 3, limit: 2 })
    );
}

#[test]
fn brackets_in_scalars_and_comments_are_not_nesting() {
    let cases = [
        "a: \"[[[[[[\"\n",
        "a: '[[[[['\n",
        "a: 'it''s [[[['\n",
        "a: \"esc \\\" [[[[\"\n",
        "a: plain [[[[ text {{{{\n",
        "a: x # [[[[[[\n",
        "# [[[[[[[\na: b\n",
        "a: |\n  [[[[[[\n  \"unclosed\n  'also\nb: c\n",
        "- |\n [[[[[\n- >-\n  {{{{{\n",
        "a: plain\n  continued [[[[ \"quote\nb: x\n",
        "a: \"two\n  lines [[[[\"\nb: x\n",
        "[\"[[[[\", '{{{{', plain]\n",
        "{a: \"]]]]\", b: 'x'}\n",
        "a: !tag [1]\n",
    ];
    for text in cases {
        let value: serde_yaml::Value = serde_yaml::from_str(text).expect(text);
        assert!(max_depth(text) <= 2, "{text:?}: {}", max_depth(text));
        assert!(max_depth(text) >= depth_of(&value), "{text:?}");
    }
    // A long realistic Job counts about what it nests.
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        command: [\"sh\", \"-c\", \"[ -f x ] && echo '{'\"]\n        env:\n        - name: A\n          valueFrom: {configMapKeyRef: {name: x, key: y}}\n";
    let value: serde_yaml::Value = serde_yaml::from_str(job).expect("job");
    let depth = max_depth(job);
    assert!(
        depth >= depth_of(&value) && depth <= depth_of(&value) + 2,
        "{depth}"
    );
}

/// A seeded xorshift64 generator: random texts that are the same on every run.
fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// The pass never counts less than libyaml nests (less one: a flow
/// collection used as a key opens its mapping after it closes), on
/// random texts of YAML's structural characters.
#[test]
fn the_pass_never_counts_less_than_the_parser_nests() {
    let alphabet: &[&str] = &[
        "[", "]", "{", "}", ",", ":", ": ", "- ", "? ", "\n", "\n  ", "\n    ", " ", "a", "b",
        "\"", "'", "#", "|\n", ">\n", "\\", "&x ", "*x", "!t ", "\t", "---\n", "\u{2028}",
    ];
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    let mut parsed = 0;
    for _ in 0..60_000 {
        let len = (next() % 40) as usize;
        let text: String = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let Ok(values) = serde_yaml::Deserializer::from_str(&text)
            .map(serde::Deserialize::deserialize)
            .collect::<Result<Vec<serde_yaml::Value>, _>>()
        else {
            continue;
        };
        parsed += 1;
        let nested = values.iter().map(depth_of).max().unwrap_or(0);
        assert!(
            max_depth(&text) + 1 >= nested,
            "{text:?}: pass {} < parser {nested}",
            max_depth(&text)
        );
    }
    assert!(parsed > 1_000, "{parsed}");
}

/// No prefix hides nesting the parser goes on to read: whenever serde_yaml
/// gets deep enough to give up (its limit is 128), the pass refused first.
#[test]
fn no_prefix_hides_nesting_from_the_pass() {
    let alphabet: &[&str] = &[
        "[", "]", "{", "}", ",", ":", ": ", "- ", "? ", "\n", "\n  ", "\n    ", " ", "a", "\"",
        "'", "#", "|\n", ">-\n", "\\", "&x ", "!t ", "\t", "---\n", "\u{85}", "\r",
    ];
    let payloads = [
        "[".repeat(140),
        "{a: ".repeat(140),
        format!("\n{}x\n", "- ".repeat(140)),
        format!("k: {}", "[".repeat(140)),
    ];
    let mut next = xorshift(0x0123_4567_89AB_CDEF);
    let mut deep = 0;
    for _ in 0..15_000 {
        let len = (next() % 16) as usize;
        let prefix: String = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let text = format!("{prefix}{}", payloads[(next() % 4) as usize]);
        let result = serde_yaml::Deserializer::from_str(&text)
            .map(serde::Deserialize::deserialize)
            .collect::<Result<Vec<serde_yaml::Value>, _>>();
        if let Err(err) = result
            && err.to_string().contains("recursion limit exceeded")
        {
            deep += 1;
            assert!(
                check(&text, usize::MAX).is_err(),
                "{text:?}: the parser nests past 128, the pass counts {}",
                max_depth(&text)
            );
        }
    }
    assert!(deep > 300, "{deep}");
}
