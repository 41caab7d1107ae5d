//! The `"1,3-5,7"` index-set parsers: the lenient one never fails or leaves [0, completions);
//! what the strict one accepts prints back to a string it reads as the same set.
#![no_main]

use job_decider_core::index_set::IndexSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let completions = i32::from_le_bytes(*head);
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let lenient = IndexSet::parse_lenient(text, completions);
    for iv in lenient.intervals() {
        assert!(iv.first >= 0 && iv.first <= iv.last && iv.last < completions.max(0));
    }
    if let Ok(strict) = IndexSet::parse_strict(text, completions) {
        let printed = strict.to_string();
        assert_eq!(
            IndexSet::parse_strict(&printed, completions).ok(),
            Some(strict.clone())
        );
        assert_eq!(IndexSet::parse_lenient(&printed, completions), strict);
    }
});
