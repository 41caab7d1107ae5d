use super::*;

#[test]
fn durations_and_sizes() {
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
    assert!(parse_duration("soon").is_err());
    assert!(parse_duration("3d").is_err());
    assert_eq!(parse_size("256MiB"), Ok(256 << 20));
    assert_eq!(parse_size("4194304"), Ok(4_194_304));
    assert!(parse_size("lots").is_err());
    assert_eq!(parse_mode("0660"), Ok(0o660));
    assert_eq!(parse_mode("600"), Ok(0o600));
    assert_eq!(parse_mode("0o770"), Ok(0o770));
    assert!(parse_mode("0680").is_err());
    assert!(parse_mode("4770").is_err());
    assert!(parse_mode("").is_err());
}

#[test]
fn every_serve_flag_reads_the_environment() {
    use clap::CommandFactory;
    let command = Cli::command();
    let serve = command.find_subcommand("serve").expect("serve subcommand");
    for arg in serve.get_arguments() {
        let id = arg.get_id().as_str();
        if id == "help" || id == "version" {
            continue;
        }
        let want = format!("JOB_DECIDER_{}", id.to_uppercase());
        let env = arg.get_env().and_then(|e| e.to_str());
        assert_eq!(env, Some(want.as_str()), "--{id}");
    }
}
