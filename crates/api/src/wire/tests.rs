use super::*;
use prost::Message;

#[test]
fn reads_what_prost_writes() {
    let ts = pbjson_types::Timestamp {
        seconds: -5,
        nanos: 7,
    };
    let bytes = ts.encode_to_vec();
    let mut fields = Fields::of(&bytes);
    let (tag, v) = fields.next_field().unwrap().unwrap();
    assert_eq!((tag, v.int64("s").unwrap()), (1, -5));
    let (tag, v) = fields.next_field().unwrap().unwrap();
    assert_eq!((tag, v.int32("n").unwrap()), (2, 7));
    assert!(fields.next_field().unwrap().is_none());
}

#[test]
fn truncated_and_malformed_input_is_an_error_not_a_panic() {
    for bad in [
        &[0x0a, 0x05, b'a'][..], // a string cut short
        &[0x08][..],             // a varint missing
        &[
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ][..], // 11 bytes
        &[0x00][..],             // tag 0
        &[0x0f][..],             // wire type 7
        &[0x0c][..],             // end group without start
        &[0x0b, 0x08, 0x01][..], // group without end
    ] {
        let mut fields = Fields::of(bad);
        let mut result = Ok(None);
        for _ in 0..4 {
            result = fields.next_field();
            if !matches!(result, Ok(Some(_))) {
                break;
            }
        }
        assert!(result.is_err(), "{bad:?} read as {result:?}");
        assert!(
            pbjson_types::Timestamp::decode(bad).is_err(),
            "prost agrees on {bad:?}"
        );
    }
}

#[test]
fn groups_are_skipped_as_prost_skips_them() {
    // Field 9 as a group holding a varint, then field 1.
    let bytes = [0x4b, 0x08, 0x01, 0x4c, 0x08, 0x02];
    let mut fields = Fields::of(&bytes);
    assert!(matches!(fields.next_field(), Ok(Some((9, Value::Other)))));
    let (tag, v) = fields.next_field().unwrap().unwrap();
    assert_eq!((tag, v.int64("s").unwrap()), (1, 2));
    assert_eq!(
        pbjson_types::Timestamp::decode(&bytes[..]).unwrap().seconds,
        2
    );
}
