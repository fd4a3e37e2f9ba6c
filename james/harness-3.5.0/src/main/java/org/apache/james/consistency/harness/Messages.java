package org.apache.james.consistency.harness;

import java.util.Base64;
import java.util.Date;
import java.util.Random;

import javax.mail.Flags;

import org.apache.james.mailbox.MessageManager;

/** Small RFC 822 messages, some with an attachment, and the random flags they are appended with. */
class Messages {
    static final String DOMAIN = "domain.tld";
    private static final long START_MILLIS = 1_577_836_800_000L; // 2020-01-01T00:00:00Z

    static String userName(int index) {
        return "user" + index + "@" + DOMAIN;
    }

    static MessageManager.AppendCommand appendCommand(Random random, String from, String to, String subject,
                                                      boolean withAttachment) {
        Flags flags = new Flags();
        if (random.nextInt(100) < 60) {
            flags.add(Flags.Flag.SEEN);
        }
        if (random.nextInt(100) < 20) {
            flags.add(Flags.Flag.ANSWERED);
        }
        if (random.nextInt(100) < 15) {
            flags.add(Flags.Flag.FLAGGED);
        }
        if (random.nextInt(100) < 5) {
            flags.add(Flags.Flag.DRAFT);
        }
        if (random.nextInt(100) < 5) {
            flags.add(Flags.Flag.DELETED);
        }
        Date internalDate = new Date(START_MILLIS + random.nextInt(365 * 24 * 3600) * 1000L);
        return MessageManager.AppendCommand.builder()
            .withFlags(flags)
            .isRecent(random.nextInt(100) < 30)
            .withInternalDate(internalDate)
            .build(rfc822(random, from, to, subject, withAttachment));
    }

    private static String rfc822(Random random, String from, String to, String subject, boolean withAttachment) {
        String headers = "From: " + from + "\r\n"
            + "To: " + to + "\r\n"
            + "Subject: " + subject + "\r\n"
            + "Message-ID: <" + Long.toHexString(random.nextLong()) + "@" + DOMAIN + ">\r\n"
            + "MIME-Version: 1.0\r\n";
        String text = "Hello,\r\n\r\nthis is " + subject.toLowerCase() + ".\r\n\r\n-- \r\n" + from + "\r\n";
        if (!withAttachment) {
            return headers + "Content-Type: text/plain; charset=UTF-8\r\n\r\n" + text;
        }
        byte[] attachment = new byte[64 + random.nextInt(512)];
        random.nextBytes(attachment);
        String boundary = "boundary-" + Long.toHexString(random.nextLong());
        return headers
            + "Content-Type: multipart/mixed; boundary=\"" + boundary + "\"\r\n\r\n"
            + "--" + boundary + "\r\n"
            + "Content-Type: text/plain; charset=UTF-8\r\n\r\n"
            + text + "\r\n"
            + "--" + boundary + "\r\n"
            + "Content-Type: application/octet-stream; name=\"report.bin\"\r\n"
            + "Content-Disposition: attachment; filename=\"report.bin\"\r\n"
            + "Content-Transfer-Encoding: base64\r\n\r\n"
            + Base64.getMimeEncoder().encodeToString(attachment) + "\r\n"
            + "--" + boundary + "--\r\n";
    }
}
