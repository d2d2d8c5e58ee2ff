//! Feeds arbitrary bytes to the `.cm` loader: it must never panic, whatever the input, and a
//! net it accepts must write out and load back to an equal net.
#![no_main]

use cameleon::Net;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(net) = Net::from_cm(text) {
        let canonical = net.to_cm();
        let again = Net::from_cm(&canonical).expect("canonical text loads");
        assert!(again == net, "canonical text loads back to an equal net");
        assert_eq!(again.to_cm(), canonical, "canonical text is stable");
    }
});
