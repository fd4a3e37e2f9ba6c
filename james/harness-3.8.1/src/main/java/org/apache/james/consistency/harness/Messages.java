package org.apache.james.consistency.harness;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Random;

import javax.mail.Flags;

/** Small RFC 822 messages and random flags, as a real mailbox holds them. */
public class Messages {
    private static final String[] KEYWORDS = {"$Forwarded", "$MDNSent", "work", "todo", "$Junk"};

    public static String message(String from, String to, String subject, boolean withAttachment) {
        String headers = "From: " + from + "\r\nTo: " + to + "\r\nSubject: " + subject
            + "\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\nMessage-ID: <" + Math.abs(subject.hashCode()) + "."
            + System.nanoTime() + "@domain.tld>\r\nMIME-Version: 1.0\r\n";
        if (!withAttachment) {
            return headers + "Content-Type: text/plain; charset=UTF-8\r\n\r\nHello, this is " + subject + ".\r\n";
        }
        String attachment = Base64.getMimeEncoder().encodeToString(
            ("attachment of " + subject + "\n").repeat(20).getBytes(StandardCharsets.UTF_8));
        return headers + "Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n"
            + "--b1\r\nContent-Type: text/plain; charset=UTF-8\r\n\r\nSee the attached file.\r\n"
            + "--b1\r\nContent-Type: text/plain; name=\"notes.txt\"\r\nContent-Disposition: attachment; filename=\"notes.txt\"\r\n"
            + "Content-Transfer-Encoding: base64\r\n\r\n" + attachment + "\r\n--b1--\r\n";
    }

    /** System flags at realistic shares and now and then a user keyword. */
    public static Flags randomFlags(Random random) {
        Flags flags = new Flags();
        if (random.nextDouble() < 0.6) {
            flags.add(Flags.Flag.SEEN);
        }
        if (random.nextDouble() < 0.15) {
            flags.add(Flags.Flag.FLAGGED);
        }
        if (random.nextDouble() < 0.1) {
            flags.add(Flags.Flag.ANSWERED);
        }
        if (random.nextDouble() < 0.05) {
            flags.add(Flags.Flag.DRAFT);
        }
        if (random.nextDouble() < 0.1) {
            flags.add(Flags.Flag.DELETED);
        }
        if (random.nextDouble() < 0.3) {
            flags.add(KEYWORDS[random.nextInt(KEYWORDS.length)]);
        }
        return flags;
    }

    public static Flags keyword(Random random) {
        return new Flags(KEYWORDS[random.nextInt(KEYWORDS.length)]);
    }
}
