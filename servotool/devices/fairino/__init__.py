"""FAIRINO cobots (FR3, FR20, the vendor SimMachine): wire protocols, the client, and a simulator.

Modules:

* fields.py, codes.py: the CNDE field table (names, wire types) and the error-code and fault tables.
* protocol.py: pure encode/decode of CNDE frames, state layouts and UDP commands (CndeFrameError /
  UdpFrameError if bad).
* client.py: FairinoArm (devices.arm.Arm) and open_url for `fairino://HOST` URLs; stream.py (state-stream
  reader) and rpc.py (XML-RPC with timeouts) serve it. It never imports the simulator.
* sim.py, cnde_server.py: FairinoSim, a controller that speaks the same protocols on real sockets, in real
  time or in lock-step with its clients on a FakeClock (LockStep); sim.open_url opens `sim:PROFILE` URLs
  (the registry sends them there): the simulator, then the real client connected to it.
* physics.py, profiles.py: the simulated joints (lag, enable window, runaway, refusal) and their parameters.

Unconfirmed, kept configurable or documented where used:

* UDP reply frames: the simulator answers each command with its errcode as text (`udp_reply`); a real
  controller's reply content is unknown, so the client treats replies as optional.
* Fault numbering: main 1 / sub 32 was seen on real arms; sub 23..28 (axis command speed) is from the CNDE
  documentation with an assumed main code of 1.
* rbt_enable_state reads 1 when enabled, 0 when not; the enable window is not visible in the state.
* CNDE message status values other than 0 (the simulator uses 1 for a refused configuration).
* The giant-step speed check threshold (`refuse_step_deg`, `refuse_speed_factor`) and the runaway band
  applied per command at any cmdT (it was measured at 10 ms only).
"""
