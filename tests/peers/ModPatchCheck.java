// Drives the patched mod's pure-Java helpers (mod-patch 0001 and 0002) the way the
// mod does, and prints what an agent would receive, for
// malmo-bridge/tests/mod_patch_series.rs to parse with malmo-bridge:
//   line 1: the reply to MALMO_MBAG_VERSION;
//   line 2: an observation fragment with the version and the block changes;
//   line 3: "drained" if a second drain finds nothing.

import com.microsoft.Malmo.Utils.BlockChangeLog;
import com.microsoft.Malmo.Utils.MbagModVersion;

public class ModPatchCheck
{
    public static void main(String[] args)
    {
        System.out.println(MbagModVersion.controlReply());
        BlockChangeLog.Cursor cursor = new BlockChangeLog.Cursor();
        // Made before the observer's first round trip: it starts at the head and never sees this.
        BlockChangeLog.record(10, "early", "place", 0, 2, 0, "dirt");
        cursor.accept(BlockChangeLog.head(), BlockChangeLog.encodeSince(cursor.after()));
        BlockChangeLog.record(11, "human", "place", 3, 2, 1, "planks");
        // Two requests cross: both carry the same cursor, and the second reply repeats the first.
        long after = cursor.after();
        String first = BlockChangeLog.encodeSince(after);
        long firstHead = BlockChangeLog.head();
        BlockChangeLog.record(12, "assistant", "break", 3, 2, 1, "planks");
        String second = BlockChangeLog.encodeSince(after);
        long secondHead = BlockChangeLog.head();
        cursor.accept(firstHead, first);
        cursor.accept(secondHead, second);
        String changes = cursor.drainJson();
        System.out.println("{\"" + MbagModVersion.OBSERVATION_KEY + "\":\"" + MbagModVersion.VERSION + "\",\""
                + BlockChangeLog.OBSERVATION_KEY + "\":" + changes + "}");
        System.out.println(cursor.drainJson() == null ? "drained" : "not drained");
    }
}
