# user/capture/: capture files read with libpcap (pcap and pcapng, Ethernet), several files as
# one stream; used by replay and by the census over captures (`connections`, `flowlabel spread`).
ROCEMETER_SRCS += user/capture/capture.c
