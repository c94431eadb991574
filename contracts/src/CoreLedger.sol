// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/**
 * @notice The "core" side of the perp bridges (one chain holds it): accounts credited by a relayer
 * for deposits seen on the bridges of every chain, each deposit once, under its `coreHash`
 * (see PerpBridgeBase). A deposit the core side refuses (below the bridge's minimum) is rejected
 * with a reason instead; a hash credited or rejected is never processed again.
 */
contract CoreLedger {
    enum Status {
        None,
        Credited,
        Rejected
    }

    event Credited(
        bytes32 indexed coreHash,
        address indexed depositor,
        address indexed bridge,
        uint256 chainId,
        address token,
        uint256 amount,
        uint8 destination
    );
    event Rejected(bytes32 indexed coreHash, string reason);
    event RelayerSet(address indexed relayer, bool allowed);

    error NotOwner(address account);
    error NotRelayer(address account);
    error AlreadyProcessed(bytes32 coreHash, Status status);
    error ZeroAmount();

    address public owner;
    mapping(address account => bool) public isRelayer;
    mapping(bytes32 coreHash => Status) public status;
    /// account => destination (0 perp, 1 spot) => source chain => source token => amount
    mapping(address => mapping(uint8 => mapping(uint256 => mapping(address => uint256)))) public balances;
    uint256 public creditedCount;
    uint256 public rejectedCount;

    constructor(address owner_, address relayer) {
        owner = owner_;
        if (relayer != address(0)) {
            isRelayer[relayer] = true;
            emit RelayerSet(relayer, true);
        }
    }

    function setRelayer(address relayer, bool allowed) external {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        isRelayer[relayer] = allowed;
        emit RelayerSet(relayer, allowed);
    }

    modifier onlyRelayer() {
        if (!isRelayer[msg.sender]) revert NotRelayer(msg.sender);
        _;
    }

    function credit(
        bytes32 coreHash,
        address bridge,
        uint256 chainId,
        address depositor,
        address token,
        uint256 amount,
        uint8 destination
    ) external onlyRelayer {
        _process(coreHash, Status.Credited);
        if (amount == 0) revert ZeroAmount();
        balances[depositor][destination][chainId][token] += amount;
        creditedCount++;
        emit Credited(coreHash, depositor, bridge, chainId, token, amount, destination);
    }

    function reject(bytes32 coreHash, string calldata reason) external onlyRelayer {
        _process(coreHash, Status.Rejected);
        rejectedCount++;
        emit Rejected(coreHash, reason);
    }

    function _process(bytes32 coreHash, Status to) internal {
        Status s = status[coreHash];
        if (s != Status.None) revert AlreadyProcessed(coreHash, s);
        status[coreHash] = to;
    }
}
