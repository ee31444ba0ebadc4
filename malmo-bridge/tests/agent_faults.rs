//! A Minecraft that is missing, hangs or answers garbage gives a typed error
//! within the deadline, never a hang.

use std::time::Duration;

use malmo_bridge::agent::{
    AgentError, Availability, ClientAddr, ContactError, Liveness, Timeouts, probe, reserve_clients,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::Instant;

fn quick() -> Timeouts {
    Timeouts {
        exchange: Duration::from_millis(500),
        ..Timeouts::default()
    }
}

/// A client that accepts and then does `answer` with the connection.
async fn fake_client<F, Fut>(answer: F) -> ClientAddr
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            answer(s).await;
        }
    });
    ClientAddr::new("127.0.0.1", port)
}

fn outcome_of(err: &AgentError) -> &Result<malmo_bridge::control::ControlReply, ContactError> {
    match err {
        AgentError::InsufficientClients { attempts, .. } => &attempts.0[0].outcome,
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn no_minecraft_is_reported_at_once_with_advice() {
    // Bind and drop, so that nothing listens on the port.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let err = reserve_clients(&[ClientAddr::new("127.0.0.1", port)], 1, "x", &quick())
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(matches!(outcome_of(&err), Err(ContactError::Connect(_))));
    assert!(err.to_string().contains("is Minecraft running"), "{err}");
}

#[tokio::test]
async fn a_hung_client_times_out() {
    let client = fake_client(|mut s| async move {
        let mut buf = [0u8; 256];
        let _ = s.read(&mut buf).await;
        // Never answers; keeps the connection open.
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let started = Instant::now();
    let err = reserve_clients(&[client], 1, "x", &quick())
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(outcome_of(&err), Err(ContactError::Timeout(_))),
        "{err}"
    );
}

#[tokio::test]
async fn garbage_replies_are_framing_errors_or_failed_contacts() {
    // A hostile length prefix: refused without allocating it.
    let hostile = fake_client(|mut s| async move {
        let mut buf = [0u8; 256];
        let _ = s.read(&mut buf).await;
        let _ = s.write_all(&[0xff, 0xff, 0xff, 0xf0, b'x']).await;
    })
    .await;
    let err = reserve_clients(&[hostile], 1, "x", &quick())
        .await
        .unwrap_err();
    assert!(
        matches!(outcome_of(&err), Err(ContactError::Framing(_))),
        "{err}"
    );

    // Closing without a reply (what the mod does with a line it does not know).
    let silent = fake_client(|mut s| async move {
        let mut buf = [0u8; 256];
        let _ = s.read(&mut buf).await;
    })
    .await;
    let err = reserve_clients(&[silent], 1, "x", &quick())
        .await
        .unwrap_err();
    assert!(
        matches!(outcome_of(&err), Err(ContactError::NoReply)),
        "{err}"
    );
}

/// A fake mod that answers every control request from a fixed table.
async fn answering_client(reply_to: fn(&str) -> Option<&'static str>) -> ClientAddr {
    fake_client(move |mut s| async move {
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while !line.ends_with(b"\n") {
            if s.read(&mut byte).await.unwrap_or(0) == 0 {
                return;
            }
            line.push(byte[0]);
        }
        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
        if let Some(reply) = reply_to(&text) {
            let mut frame = (reply.len() as u32).to_be_bytes().to_vec();
            frame.extend(reply.as_bytes());
            let _ = s.write_all(&frame).await;
        }
    })
    .await
}

#[tokio::test]
async fn probes_tell_idle_busy_wrong_version_and_dead_clients_apart() {
    let deadline = Duration::from_millis(500);
    let idle = answering_client(|line| {
        Some(if line.starts_with("MALMO_FIND_SERVER") {
            "MALMONOSERVER"
        } else {
            "MALMOOK"
        })
    })
    .await;
    let report = probe(&idle, deadline, true).await;
    assert!(matches!(report.liveness, Liveness::Answers(_)), "{report}");
    assert_eq!(report.availability, Some(Availability::Idle));
    assert!(report.is_usable() && report.advice().is_none(), "{report}");

    let busy = answering_client(|line| {
        Some(if line.starts_with("MALMO_FIND_SERVER") {
            "MALMONOSERVER"
        } else {
            "MALMOBUSY"
        })
    })
    .await;
    let report = probe(&busy, deadline, true).await;
    assert_eq!(report.availability, Some(Availability::Busy));
    assert!(!report.is_usable());
    assert!(report.advice().unwrap().contains("wait"), "{report}");

    let old = answering_client(|line| {
        Some(if line.starts_with("MALMO_FIND_SERVER") {
            "MALMONOSERVER"
        } else {
            "MALMOERRORVERSIONMISMATCH in reservation string (Got MALMO_REQUEST_CLIENT:0.38.0, expected 0.37.0)"
        })
    })
    .await;
    let report = probe(&old, deadline, true).await;
    assert!(matches!(
        report.availability,
        Some(Availability::VersionMismatch(_))
    ));
    assert!(report.advice().unwrap().contains("mbag-malmo"), "{report}");

    let not_malmo = answering_client(|_| None).await;
    let report = probe(&not_malmo, deadline, true).await;
    assert!(
        matches!(report.liveness, Liveness::ClosedWithoutReply),
        "{report}"
    );
    assert!(report.advice().unwrap().contains("not a Malmo mod"));

    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let report = probe(&ClientAddr::new("127.0.0.1", port), deadline, true).await;
    assert!(
        matches!(report.liveness, Liveness::NotListening(_)),
        "{report}"
    );
    assert!(report.advice().unwrap().contains("Start Minecraft"));
}
