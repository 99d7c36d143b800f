// pi extension for the approval recordings (testdata/approvals/pi): every tool call
// is put to the RPC client as ctx.ui.confirm (or ctx.ui.select with HUB_GATE_SELECT=1)
// before it runs; a refusal blocks the call with a reason the model sees.
// HUB_GATE_TIMEOUT_MS=N passes {timeout: N}; HUB_GATE_SIGNAL=1 passes {signal: ctx.signal}.
export default function (pi: any) {
	pi.on("tool_call", async (event: any, ctx: any) => {
		if (!ctx.hasUI) return { block: true, reason: "hub: no approver (pi has no UI in this mode)" };
		const opts: any = {};
		if (process.env.HUB_GATE_TIMEOUT_MS) opts.timeout = Number(process.env.HUB_GATE_TIMEOUT_MS);
		if (process.env.HUB_GATE_SIGNAL) opts.signal = ctx.signal;
		const call = JSON.stringify({ tool: event.toolName, toolCallId: event.toolCallId, input: event.input, cwd: ctx.cwd });
		if (process.env.HUB_GATE_SELECT) {
			const choice = await ctx.ui.select("hub-approval " + call, ["allow", "allow-session", "deny"], opts);
			if (choice === "allow" || choice === "allow-session") return undefined;
			return { block: true, reason: "hub: denied by the approver (" + String(choice) + ")" };
		}
		const ok = await ctx.ui.confirm("hub-approval", call, opts);
		if (!ok) return { block: true, reason: "hub: denied by the approver" };
		return undefined;
	});
}
