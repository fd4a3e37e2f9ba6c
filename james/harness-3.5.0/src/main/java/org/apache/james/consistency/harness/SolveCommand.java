package org.apache.james.consistency.harness;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.james.mailbox.cassandra.mail.task.RecomputeMailboxCountersService;
import org.apache.james.mailbox.cassandra.mail.task.RecomputeMailboxCountersTask;
import org.apache.james.mailbox.cassandra.mail.task.RecomputeMailboxCountersTaskAdditionalInformationDTO;
import org.apache.james.mailbox.cassandra.mail.task.SolveMailboxInconsistenciesService;
import org.apache.james.mailbox.cassandra.mail.task.SolveMailboxInconsistenciesTask;
import org.apache.james.mailbox.cassandra.mail.task.SolveMailboxInconsistenciesTaskAdditionalInformationDTO;
import org.apache.james.server.task.json.JsonTaskAdditionalInformationSerializer;
import org.apache.james.task.Task;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * `solve TARGET`: runs James 3.5.0's own task to completion and reports its additionalInformation as James's webadmin
 * serializes it. James 3.5.0 has SolveMailboxInconsistenciesService (mailboxes) and RecomputeMailboxCountersService
 * (counters) only: SolveMessageInconsistenciesService and RecomputeCurrentQuotasService came with James 3.6.0.
 */
class SolveCommand {
    static Map<String, Object> run(Options options) throws Exception {
        if (options.positional().size() != 1) {
            throw new BadInput("solve needs one target: mailboxes or counters (messages, quotas: not in James 3.5.0)");
        }
        String target = options.positional().get(0);
        if (target.equals("messages") || target.equals("quotas")) {
            throw new BadInput("James 3.5.0 has no " + (target.equals("messages")
                ? "SolveMessageInconsistenciesService" : "RecomputeCurrentQuotasService")
                + " (it came with James 3.6.0): target '" + target + "' is not available");
        }
        if (!target.equals("mailboxes") && !target.equals("counters")) {
            throw new BadInput("unknown target '" + target + "': use mailboxes or counters");
        }
        // --messages-per-second is accepted for the common command line; James 3.5.0's two tasks take no rate.
        options.intValue("--messages-per-second", 0);

        try (JamesPlatform platform = JamesPlatform.connect(options, false)) {
            Task task;
            JsonTaskAdditionalInformationSerializer serializer;
            if (target.equals("mailboxes")) {
                task = new SolveMailboxInconsistenciesTask(platform.get(SolveMailboxInconsistenciesService.class));
                serializer = JsonTaskAdditionalInformationSerializer.of(
                    SolveMailboxInconsistenciesTaskAdditionalInformationDTO.MODULE);
            } else {
                task = new RecomputeMailboxCountersTask(platform.get(RecomputeMailboxCountersService.class));
                serializer = JsonTaskAdditionalInformationSerializer.of(
                    RecomputeMailboxCountersTaskAdditionalInformationDTO.MODULE);
            }
            long start = System.nanoTime();
            Task.Result outcome = task.run();
            double seconds = (System.nanoTime() - start) / 1e9;

            Map<String, Object> result = new LinkedHashMap<>();
            result.put("target", target);
            result.put("james", JamesPlatform.JAMES_VERSION);
            result.put("result", outcome.name());
            result.put("additionalInformation", new ObjectMapper().readValue(
                serializer.serialize(task.details().orElseThrow()), Map.class));
            result.put("seconds", Math.round(seconds * 1000) / 1000.0);
            return result;
        }
    }
}
