"""ELF files as the plugin reads them without a debugger: headers, notes, symbols,
``.eh_frame_hdr`` tables, separate debug files, and the disk caches of what is derived
from them.  Below every other layer but the root's records and memory interface."""
