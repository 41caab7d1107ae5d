use super::*;

#[test]
fn held_bytes_merge_and_give_back() {
    let budget = Arc::new(Semaphore::new(10));
    let mut held = HeldBytes::default();
    assert!(held.take(&budget, 4));
    assert!(held.take(&budget, 6));
    assert!(!held.take(&budget, 1), "the budget is spent");
    assert_eq!(budget.available_permits(), 0);
    drop(held);
    assert_eq!(budget.available_permits(), 10);
}

/// Sends, when dropped, its thread and the budget's free bytes at that moment.
struct Witness {
    budget: Arc<Semaphore>,
    seen: std::sync::mpsc::Sender<(std::thread::ThreadId, usize)>,
}

impl Drop for Witness {
    fn drop(&mut self) {
        let _ = self
            .seen
            .send((std::thread::current().id(), self.budget.available_permits()));
    }
}

#[tokio::test]
async fn what_is_freed_after_the_response_goes_on_the_blocking_pool_before_the_bytes() {
    let budget = Arc::new(Semaphore::new(10));
    let mut held = HeldBytes::default();
    assert!(held.take(&budget, 10));
    let (seen, witnessed) = std::sync::mpsc::channel();
    let later: Box<dyn Send> = Box::new(Witness {
        budget: budget.clone(),
        seen,
    });
    drop(Release {
        charge: CallCharge::new(&budget, 10, held),
        later: Some(later),
    });
    let Ok((thread, free_then)) = witnessed.recv_timeout(Duration::from_secs(20)) else {
        panic!("the value left to free was never dropped");
    };
    assert_ne!(
        thread,
        std::thread::current().id(),
        "freed on the caller's thread"
    );
    assert_eq!(
        free_then, 0,
        "the bytes were given back before the value was freed"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while budget.available_permits() < 10 {
        assert!(
            std::time::Instant::now() < deadline,
            "bytes never given back"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[test]
fn without_anything_to_free_the_bytes_come_back_at_once() {
    let budget = Arc::new(Semaphore::new(10));
    let mut held = HeldBytes::default();
    assert!(held.take(&budget, 4));
    let charge = CallCharge::new(&budget, 10, held);
    let handler = charge.clone();
    assert!(handler.take(5).is_ok(), "what is left is taken");
    assert!(handler.take(2).is_err(), "past the budget");
    drop(handler);
    drop(Release {
        charge,
        later: None,
    });
    assert_eq!(budget.available_permits(), 10);
}

/// The call's work holds a share of the charge: the response ending (a
/// DEADLINE_EXCEEDED sent while the work still runs) gives nothing back.
#[test]
fn timed_out_call_keeps_its_bytes_while_its_work_holds_the_charge() {
    let budget = Arc::new(Semaphore::new(10));
    let mut held = HeldBytes::default();
    assert!(held.take(&budget, 4));
    let charge = CallCharge::new(&budget, 10, held);
    let work = charge.clone();
    assert!(work.take(3).is_ok());
    drop(Release {
        charge,
        later: None,
    });
    assert_eq!(
        budget.available_permits(),
        3,
        "given back while the work runs"
    );
    drop(work);
    assert_eq!(budget.available_permits(), 10);
}

fn split(chunks: &[&'static [u8]]) -> Vec<Vec<u8>> {
    let mut chunks: VecDeque<Bytes> = chunks.iter().map(|c| Bytes::from_static(c)).collect();
    prefix_apart(&mut chunks);
    chunks.iter().map(|c| c.to_vec()).collect()
}

#[test]
fn the_grpc_prefix_is_handed_over_as_a_frame_of_its_own() {
    assert_eq!(
        split(&[b"\0\0\0\0\x03abc"]),
        [b"\0\0\0\0\x03".to_vec(), b"abc".to_vec()]
    );
    // A prefix in pieces is gathered; the rest stays as it came.
    assert_eq!(
        split(&[b"\0\0", b"\0\0\x03a", b"bc"]),
        [b"\0\0\0\0\x03".to_vec(), b"a".to_vec(), b"bc".to_vec()]
    );
    assert_eq!(split(&[b"\0\0\0\0\0"]), [b"\0\0\0\0\0".to_vec()]);
    // Too short to hold a prefix: handed on as it is (tonic reports the truncation).
    assert_eq!(split(&[b"\0\0"]), [b"\0\0".to_vec()]);
    assert!(split(&[]).is_empty());
}
