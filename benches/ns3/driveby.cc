// The drive-by of benches/ns3 in ns-3: cars pass an 802.11g AP at constant
// speed while a wired server behind the AP sends each car bulk TCP, which
// starts a fixed delay after the car first associates. Every parameter comes
// from the command line (bench.py derives them from wayside's scenario);
// prints one `car` line per car and one `loop` line with the event loop's
// wall and CPU seconds, as `key=value` fields.

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/propagation-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/wifi-module.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <sstream>
#include <vector>

using namespace ns3;

namespace
{

struct Car
{
    Ptr<Node> node;
    Ipv4Address address;
    Mac48Address mac;
    bool associated = false;
    double assocX = 0.0;
    double assocT = 0.0;
    bool apAccepted = false;
    double apAcceptedX = 0.0;
    Ptr<PacketSink> sink;
    bool gotData = false;
    double firstRxT = 0.0;
    double firstRxX = 0.0;
};

// The AP's queues: what its WifiMacQueue (under the queue disc) took,
// expired (MaxDelay) and refused, and the time MPDUs spent in it.
struct ApQueue
{
    uint64_t enqueued = 0;
    uint64_t expired = 0;
    uint64_t refused = 0;
    uint64_t removed = 0;
    double sojournS = 0.0;
    uint64_t failedTries = 0;
    uint64_t failedMpdus = 0;
};

ApQueue g_apQueue;

std::vector<Car> g_cars;
Ptr<Node> g_server;
double g_startDelay = 1.5;
double g_startDelayMax = 1.5;
Ptr<UniformRandomVariable> g_startDraw;
bool g_class3Deauth = true;
Ptr<ApWifiMac> g_apMac;
uint16_t g_port = 5001;

void
StartBulk(uint32_t i)
{
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(g_cars[i].address, g_port));
    bulk.SetAttribute("MaxBytes", UintegerValue(0));
    // Installed after the simulation started: initialize it here so that it
    // starts now (Node::AddApplication does not initialize late arrivals).
    bulk.Install(g_server).Get(0)->Initialize();
}

// The AP lost the car's ACK of its association response, so it does not
// count the car as associated while the car does. ns-3's AP then drops the
// car's frames for good; a real AP answers the first such frame with a
// deauthentication (IEEE 802.11's class-3 rule, reason 7) and the car
// associates again. Emulated by disassociating the car, as that frame would.
void
CheckAssociation(uint32_t i)
{
    Car& car = g_cars[i];
    Ptr<StaWifiMac> mac =
        DynamicCast<StaWifiMac>(DynamicCast<WifiNetDevice>(car.node->GetDevice(0))->GetMac());
    if (mac->IsAssociated() && !g_apMac->IsAssociated(car.mac).has_value())
    {
        mac->NotifyChannelSwitching(0);
    }
}

// StaWifiMac's Assoc trace: on a car's first association, note where it is
// and start its bulk transfer a delay drawn uniformly in [g_startDelay,
// g_startDelayMax] later (wayside's start = "on-association" with
// start_delay and start_delay_max). After every association,
// check 100 ms later that the AP agrees.
void
OnAssoc(uint32_t i, Mac48Address)
{
    Car& car = g_cars[i];
    if (g_class3Deauth)
    {
        Simulator::Schedule(MilliSeconds(100), &CheckAssociation, i);
    }
    if (car.associated)
    {
        return;
    }
    car.associated = true;
    car.assocT = Simulator::Now().GetSeconds();
    car.assocX = car.node->GetObject<MobilityModel>()->GetPosition().x;
    Simulator::Schedule(Seconds(g_startDraw->GetValue(g_startDelay, g_startDelayMax)), &StartBulk, i);
}

// A car's PacketSink Rx trace: where its first data arrived.
void
OnRx(uint32_t i, Ptr<const Packet>, const Address&)
{
    Car& car = g_cars[i];
    if (!car.gotData)
    {
        car.gotData = true;
        car.firstRxT = Simulator::Now().GetSeconds();
        car.firstRxX = car.node->GetObject<MobilityModel>()->GetPosition().x;
    }
}

void
OnWmqEnqueue(Ptr<const WifiMpdu>)
{
    ++g_apQueue.enqueued;
}

void
OnWmqExpired(Ptr<const WifiMpdu>)
{
    ++g_apQueue.expired;
}

void
OnWmqRefused(Ptr<const WifiMpdu>)
{
    ++g_apQueue.refused;
}

// Dequeue: the MPDU left the queue (acknowledged, or its tries were used
// up); its time stamp is when it was queued.
void
OnWmqDequeue(Ptr<const WifiMpdu> mpdu)
{
    ++g_apQueue.removed;
    g_apQueue.sojournS += (Simulator::Now() - mpdu->GetTimestamp()).GetSeconds();
}

// The AP's station manager: a unicast transmission went unacknowledged,
// or an MPDU used up its tries.
void
OnApTryFailed(Mac48Address)
{
    ++g_apQueue.failedTries;
}

void
OnApMpduFailed(Mac48Address)
{
    ++g_apQueue.failedMpdus;
}

// ApWifiMac's AssociatedSta trace: the AP counts the car as associated
// only once the car acknowledged its association response. Note where the
// car was the first time.
void
OnApAssoc(uint16_t, Mac48Address sta)
{
    for (Car& car : g_cars)
    {
        if (car.mac == sta && !car.apAccepted)
        {
            car.apAccepted = true;
            car.apAcceptedX = car.node->GetObject<MobilityModel>()->GetPosition().x;
        }
    }
}

// The numbers of a comma-separated list; nothing if any item is not one.
std::vector<double>
ParseList(const std::string& text)
{
    std::vector<double> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ','))
    {
        std::size_t used = 0;
        try
        {
            out.push_back(std::stod(item, &used));
        }
        catch (const std::exception&)
        {
            return {};
        }
        if (used != item.size())
        {
            return {};
        }
    }
    return out;
}

} // namespace

int
main(int argc, char* argv[])
{
    std::string xs = "-1500";
    double carY = 0.0;
    double apX = 0.0;
    double apY = 10.0;
    double height = 1.5;
    double speed = 80.0 / 3.6;
    double duration = 135.0;
    double apTxPower = 19.0;
    double carTxPower = 15.0;
    double antennaGain = 7.0;
    double noiseFigure = 6.0;
    double referenceLoss = 40.2;
    double d0 = 1.0;
    double d1 = 230.0;
    double d2 = 700.0;
    double n0 = 3.0;
    double n1 = 4.0;
    double n2 = 6.0;
    double nakagamiM = 4.0 / 3.0;
    double preambleMinRssi = -82.0;
    double captureMargin = 10.0;
    double ccaEd = -62.0;
    double linkMbps = 100.0;
    double linkDelayMs = 25.0;
    uint32_t mss = 1460;
    uint32_t rcvBuf = 65535;
    uint32_t initialCwnd = 10;
    double minRtoMs = 200.0;
    double delAckMs = 40.0;
    double arpDeadMs = 1.0;
    uint32_t seed = 1;
    bool apQdisc = true;
    CommandLine cmd(__FILE__);
    cmd.AddValue("xs", "comma-separated start x of each car (m)", xs);
    cmd.AddValue("carY", "the road's y (m)", carY);
    cmd.AddValue("apX", "AP x (m)", apX);
    cmd.AddValue("apY", "AP y (m)", apY);
    cmd.AddValue("height", "antenna height of every radio (m)", height);
    cmd.AddValue("speed", "car speed (m/s)", speed);
    cmd.AddValue("duration", "simulated seconds", duration);
    cmd.AddValue("apTxPower", "AP tx power (dBm)", apTxPower);
    cmd.AddValue("carTxPower", "car tx power (dBm)", carTxPower);
    cmd.AddValue("antennaGain", "tx and rx antenna gain of every radio (dBi)", antennaGain);
    cmd.AddValue("noiseFigure", "receiver noise figure (dB)", noiseFigure);
    cmd.AddValue("referenceLoss", "path loss at d0 (dB)", referenceLoss);
    cmd.AddValue("d0", "reference distance (m)", d0);
    cmd.AddValue("d1", "first breakpoint (m)", d1);
    cmd.AddValue("d2", "second breakpoint (m)", d2);
    cmd.AddValue("n0", "exponent d0..d1", n0);
    cmd.AddValue("n1", "exponent d1..d2", n1);
    cmd.AddValue("n2", "exponent beyond d2", n2);
    cmd.AddValue("nakagamiM", "Nakagami m of the fast fading (0: none)", nakagamiM);
    cmd.AddValue("preambleMinRssi", "preamble detection floor (dBm)", preambleMinRssi);
    cmd.AddValue("captureMargin", "frame capture margin (dB)", captureMargin);
    cmd.AddValue("ccaEd", "CCA energy detection threshold (dBm)", ccaEd);
    cmd.AddValue("linkMbps", "server-AP link rate (Mbit/s)", linkMbps);
    cmd.AddValue("linkDelayMs", "server-AP link one-way delay (ms)", linkDelayMs);
    cmd.AddValue("mss", "TCP segment size (B)", mss);
    cmd.AddValue("rcvBuf", "TCP receive buffer, the most the window offers (B)", rcvBuf);
    cmd.AddValue("initialCwnd", "TCP initial window (segments)", initialCwnd);
    cmd.AddValue("minRtoMs", "TCP minimum RTO (ms)", minRtoMs);
    cmd.AddValue("delAckMs", "TCP delayed-ACK timeout (ms)", delAckMs);
    cmd.AddValue("arpDeadMs", "how long a failed ARP entry drops packets (ms)", arpDeadMs);
    cmd.AddValue("startDelay", "bulk start after first association, least (s)", g_startDelay);
    cmd.AddValue("startDelayMax", "bulk start after first association, most (s)", g_startDelayMax);
    cmd.AddValue("seed", "run number", seed);
    cmd.AddValue("apQdisc",
                 "keep ns-3's default queue disc (FqCoDel) on the AP's radio; false: "
                 "only the WifiMacQueue",
                 apQdisc);
    cmd.AddValue("class3Deauth",
                 "emulate the AP's deauthentication of a car it does not count as associated",
                 g_class3Deauth);
    cmd.Parse(argc, argv);

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);
    if (g_startDelayMax < g_startDelay)
    {
        g_startDelayMax = g_startDelay;
    }
    g_startDraw = CreateObject<UniformRandomVariable>();
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rcvBuf));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(initialCwnd));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(minRtoMs)));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(delAckMs)));
    Config::SetDefault("ns3::ArpCache::DeadTimeout", TimeValue(MilliSeconds(arpDeadMs)));

    std::vector<double> startX = ParseList(xs);
    if (startX.empty())
    {
        std::fprintf(stderr,
                     "--xs: '%s' is not a comma-separated list of start positions in m "
                     "(e.g. -1500,-100)\n",
                     xs.c_str());
        return 2;
    }
    NodeContainer ap(1);
    NodeContainer server(1);
    NodeContainer cars(startX.size());
    g_server = server.Get(0);

    // Channel: ThreeLogDistance path loss, then Nakagami fast fading.
    YansWifiChannelHelper channel;
    channel.SetPropagationDelay("ns3::ConstantSpeedPropagationDelayModel");
    channel.AddPropagationLoss("ns3::ThreeLogDistancePropagationLossModel",
                               "Distance0", DoubleValue(d0),
                               "Distance1", DoubleValue(d1),
                               "Distance2", DoubleValue(d2),
                               "Exponent0", DoubleValue(n0),
                               "Exponent1", DoubleValue(n1),
                               "Exponent2", DoubleValue(n2),
                               "ReferenceLoss", DoubleValue(referenceLoss));
    if (nakagamiM > 0)
    {
        channel.AddPropagationLoss("ns3::NakagamiPropagationLossModel",
                                   "m0", DoubleValue(nakagamiM),
                                   "m1", DoubleValue(nakagamiM),
                                   "m2", DoubleValue(nakagamiM));
    }
    Ptr<YansWifiChannel> shared = channel.Create();

    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211g);
    wifi.SetRemoteStationManager("ns3::MinstrelWifiManager");
    YansWifiPhyHelper phy;
    phy.SetChannel(shared);
    phy.SetErrorRateModel("ns3::NistErrorRateModel");
    phy.SetPreambleDetectionModel("ns3::ThresholdPreambleDetectionModel",
                                  "MinimumRssi", DoubleValue(preambleMinRssi));
    if (captureMargin >= 0)
    {
        phy.SetFrameCaptureModel("ns3::SimpleFrameCaptureModel",
                                 "Margin", DoubleValue(captureMargin));
    }
    phy.Set("TxGain", DoubleValue(antennaGain));
    phy.Set("RxGain", DoubleValue(antennaGain));
    phy.Set("RxNoiseFigure", DoubleValue(noiseFigure));
    phy.Set("CcaEdThreshold", DoubleValue(ccaEd));
    phy.Set("ChannelSettings", StringValue("{6, 20, BAND_2_4GHZ, 0}"));

    Ssid ssid("wayside");
    WifiMacHelper mac;
    phy.Set("TxPowerStart", DoubleValue(apTxPower));
    phy.Set("TxPowerEnd", DoubleValue(apTxPower));
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid));
    NetDeviceContainer apDev = wifi.Install(phy, mac, ap);
    phy.Set("TxPowerStart", DoubleValue(carTxPower));
    phy.Set("TxPowerEnd", DoubleValue(carTxPower));
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid));
    NetDeviceContainer carDev = wifi.Install(phy, mac, cars);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(linkMbps * 1e6)));
    p2p.SetChannelAttribute("Delay", TimeValue(MilliSeconds(linkDelayMs)));
    NetDeviceContainer wired = p2p.Install(ap.Get(0), server.Get(0));

    MobilityHelper fixed;
    Ptr<ListPositionAllocator> at = CreateObject<ListPositionAllocator>();
    at->Add(Vector(apX, apY, height));
    at->Add(Vector(apX, apY + 1000.0, height)); // the server: wired only
    fixed.SetPositionAllocator(at);
    fixed.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    fixed.Install(NodeContainer(ap, server));
    MobilityHelper moving;
    moving.SetMobilityModel("ns3::ConstantVelocityMobilityModel");
    moving.Install(cars);
    for (uint32_t i = 0; i < cars.GetN(); ++i)
    {
        Ptr<ConstantVelocityMobilityModel> m =
            cars.Get(i)->GetObject<ConstantVelocityMobilityModel>();
        m->SetPosition(Vector(startX[i], carY, height));
        m->SetVelocity(Vector(speed, 0, 0));
    }

    InternetStackHelper internet;
    internet.Install(NodeContainer(ap, server, cars));
    Ipv4AddressHelper addr;
    addr.SetBase("10.1.0.0", "255.255.0.0");
    addr.Assign(apDev);
    Ipv4InterfaceContainer carIf = addr.Assign(carDev);
    if (!apQdisc)
    {
        TrafficControlHelper().Uninstall(apDev);
    }
    addr.SetBase("10.2.0.0", "255.255.255.0");
    addr.Assign(wired);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                InetSocketAddress(Ipv4Address::GetAny(), g_port));
    for (uint32_t i = 0; i < cars.GetN(); ++i)
    {
        Car car;
        car.node = cars.Get(i);
        car.address = carIf.GetAddress(i);
        car.sink = DynamicCast<PacketSink>(sinkHelper.Install(cars.Get(i)).Get(0));
        Ptr<WifiNetDevice> dev = DynamicCast<WifiNetDevice>(carDev.Get(i));
        car.mac = Mac48Address::ConvertFrom(dev->GetAddress());
        g_cars.push_back(car);
        dev->GetMac()->TraceConnectWithoutContext("Assoc", MakeBoundCallback(&OnAssoc, i));
        car.sink->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnRx, i));
    }

    g_apMac = DynamicCast<ApWifiMac>(DynamicCast<WifiNetDevice>(apDev.Get(0))->GetMac());
    g_apMac->TraceConnectWithoutContext("AssociatedSta", MakeCallback(&OnApAssoc));
    Ptr<WifiMacQueue> apWmq =
        g_apMac->GetQosSupported() ? g_apMac->GetTxopQueue(AC_BE) : g_apMac->GetTxop()->GetWifiMacQueue();
    apWmq->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnWmqEnqueue));
    apWmq->TraceConnectWithoutContext("Expired", MakeCallback(&OnWmqExpired));
    apWmq->TraceConnectWithoutContext("DropBeforeEnqueue", MakeCallback(&OnWmqRefused));
    apWmq->TraceConnectWithoutContext("Dequeue", MakeCallback(&OnWmqDequeue));
    Ptr<WifiRemoteStationManager> apRates =
        DynamicCast<WifiNetDevice>(apDev.Get(0))->GetRemoteStationManager();
    apRates->TraceConnectWithoutContext("MacTxDataFailed", MakeCallback(&OnApTryFailed));
    apRates->TraceConnectWithoutContext("MacTxFinalDataFailed", MakeCallback(&OnApMpduFailed));

    Simulator::Stop(Seconds(duration));
    auto wall0 = std::chrono::steady_clock::now();
    std::clock_t cpu0 = std::clock();
    Simulator::Run();
    std::clock_t cpu1 = std::clock();
    auto wall1 = std::chrono::steady_clock::now();

    for (uint32_t i = 0; i < g_cars.size(); ++i)
    {
        const Car& car = g_cars[i];
        std::printf("car index=%u bytes=%llu associated=%d assoc_x=%.2f assoc_t=%.4f "
                    "ap_accepted=%d ap_accepted_x=%.2f data=%d data_x=%.2f data_t=%.4f\n",
                    i,
                    static_cast<unsigned long long>(car.sink->GetTotalRx()),
                    car.associated ? 1 : 0,
                    car.assocX,
                    car.assocT,
                    car.apAccepted ? 1 : 0,
                    car.apAcceptedX,
                    car.gotData ? 1 : 0,
                    car.firstRxX,
                    car.firstRxT);
    }
    // The queue disc over the AP's radio: its drops, summed over its
    // classes (mq has one FqCoDel per queue) or its own (a single one).
    uint64_t qdEnq = 0;
    uint64_t qdOverflow = 0;
    uint64_t qdCodel = 0;
    if (Ptr<QueueDisc> root =
            ap.Get(0)->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(apDev.Get(0)))
    {
        std::vector<Ptr<QueueDisc>> discs;
        for (std::size_t c = 0; c < root->GetNQueueDiscClasses(); ++c)
        {
            discs.push_back(root->GetQueueDiscClass(c)->GetQueueDisc());
        }
        if (discs.empty())
        {
            discs.push_back(root);
        }
        for (const auto& qd : discs)
        {
            const QueueDisc::Stats& st = qd->GetStats();
            qdEnq += st.nTotalEnqueuedPackets;
            qdOverflow += st.nTotalDroppedPacketsBeforeEnqueue;
            qdCodel += st.nTotalDroppedPacketsAfterDequeue;
        }
    }
    std::printf("apqueue wmq_enqueued=%llu wmq_expired=%llu wmq_refused=%llu wmq_removed=%llu "
                "wmq_mean_s=%.4f qdisc_enqueued=%llu qdisc_overflow=%llu qdisc_codel=%llu "
                "tries_failed=%llu mpdus_failed=%llu\n",
                static_cast<unsigned long long>(g_apQueue.enqueued),
                static_cast<unsigned long long>(g_apQueue.expired),
                static_cast<unsigned long long>(g_apQueue.refused),
                static_cast<unsigned long long>(g_apQueue.removed),
                g_apQueue.removed ? g_apQueue.sojournS / double(g_apQueue.removed) : 0.0,
                static_cast<unsigned long long>(qdEnq),
                static_cast<unsigned long long>(qdOverflow),
                static_cast<unsigned long long>(qdCodel),
                static_cast<unsigned long long>(g_apQueue.failedTries),
                static_cast<unsigned long long>(g_apQueue.failedMpdus));
    std::printf("loop wall_s=%.4f cpu_s=%.4f events=%llu\n",
                std::chrono::duration<double>(wall1 - wall0).count(),
                double(cpu1 - cpu0) / CLOCKS_PER_SEC,
                static_cast<unsigned long long>(Simulator::GetEventCount()));
    Simulator::Destroy();
    return 0;
}
