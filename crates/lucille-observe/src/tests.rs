use super::*;

fn get(url: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    match agent.get(url).call() {
        Ok(mut r) => (
            r.status().as_u16(),
            r.body_mut().read_to_string().unwrap_or_default(),
        ),
        Err(e) => (0, e.to_string()),
    }
}

fn endpoint(health: Arc<Health>) -> Endpoint {
    let settings = MetricsSettings {
        host: "127.0.0.1".into(),
        port: 0,
    };
    Endpoint::start(&settings, health).expect("the endpoint starts")
}

#[test]
fn ready_follows_the_health_and_healthz_answers_throughout() {
    let health = Arc::new(Health::new());
    let e = endpoint(health.clone());
    let base = format!("http://{}", e.addr());
    assert_eq!(get(&format!("{base}/healthz")).0, 200);
    let (status, body) = get(&format!("{base}/ready"));
    assert_eq!(status, 503);
    let reason: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    assert_eq!(reason["reason"], "validating the config");
    health.ready();
    assert_eq!(get(&format!("{base}/ready")).0, 200);
    health.draining();
    let (status, body) = get(&format!("{base}/ready"));
    assert_eq!((status, body.contains("draining")), (503, true));
    assert_eq!(get(&format!("{base}/healthz")).0, 200);
}

#[test]
fn metrics_are_the_registry_and_the_process_metrics_in_text_format() {
    let e = endpoint(Arc::new(Health::new()));
    let (status, text) = get(&format!("http://{}/metrics", e.addr()));
    assert_eq!(status, 200);
    for line in [
        "# TYPE lucille_documents_in_flight gauge",
        "# TYPE lucille_queue_depth gauge",
        "lucille_build_info{version=\"",
        "# TYPE process_cpu_seconds_total counter",
        "# TYPE process_resident_memory_bytes gauge",
        "# TYPE process_open_fds gauge",
        "# TYPE process_start_time_seconds gauge",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }
}
